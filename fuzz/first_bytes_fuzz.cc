// Fuzzes the egress proxy's reading of a guest connection's first bytes: the
// SNI of a TLS ClientHello or the Host header of an HTTP request. The guest
// chooses every byte; the name decides which allowlist entry admits it.

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "egress/first_bytes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using airlock::egress::RequestedName;
  using airlock::egress::requestedName;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  RequestedName r = requestedName(in);
  if (r.state == RequestedName::State::kFound) {
    // The proxy compares names as given: they must be in the normal form.
    if (r.name.empty() || r.name.back() == '.') __builtin_trap();
    for (unsigned char c : r.name)
      if (std::isupper(c)) __builtin_trap();
  }
  if (r.state != RequestedName::State::kFound && !r.name.empty()) __builtin_trap();
  // A decision taken on a prefix is the decision on the whole stream (the
  // proxy decides once, as soon as it can), below the 16 KiB header bound.
  if (size <= 16384) {
    RequestedName early = requestedName(in.substr(0, size / 2));
    if (early.state != RequestedName::State::kIncomplete &&
        (early.state != r.state || early.name != r.name || early.tls != r.tls))
      __builtin_trap();
  }
  return 0;
}
