// Fuzzes DNS over TCP as the DNS proxy serves it: the input is a hostile TCP
// byte stream, delivered in chunks whose sizes the input also chooses; every
// complete message goes through DnsAnswerer (upstream answers with a fixed
// response) and its answer is framed. Checks the framing invariants: the
// messages re-framed are exactly the bytes consumed, what is left pending is
// the rest, and every framed answer reads back as that one answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "egress/dns_answerer.h"
#include "egress/dns_tcp.h"

namespace {

class EchoIdUpstream : public airlock::egress::Upstream {
 public:
  airlock::Result<std::string> exchange(const std::string& query) override {
    // id of the query, QR set, no answers: a well-formed empty response.
    std::string out = query;
    if (out.size() >= 3) out[2] = static_cast<char>(out[2] | 0x80);
    return out;
  }
};

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace airlock::egress;
  static const Policy policy{Profile::kLocked, {*parseHostRule("api.example.com"), *parseHostRule("*.example.org")}};
  if (size < 1) return 0;
  // First byte: chunk size pattern (1..256 bytes per read).
  size_t chunk = static_cast<size_t>(data[0]) + 1;
  std::string stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  EchoIdUpstream upstream;
  AddressBook book(std::chrono::seconds(1), std::chrono::seconds(60));
  DnsAnswerer answerer(policy, book, upstream);
  DnsTcpReader reader;
  std::string reframed;
  for (size_t pos = 0; pos < stream.size(); pos += chunk) {
    reader.feed(std::string_view(stream).substr(pos, chunk));
    while (auto message = reader.next()) {
      reframed += frameDnsMessage(*message);
      std::string response = answerer.answer(*message);
      if (response.empty()) continue;
      std::string framed = frameDnsMessage(response);
      check(framed.size() == response.size() + 2);
      DnsTcpReader back;
      back.feed(framed);
      auto again = back.next();
      check(again && *again == response && back.pending() == 0);
    }
  }
  check(reframed.size() + reader.pending() == stream.size());
  check(stream.compare(0, reframed.size(), reframed) == 0);
  return 0;
}
