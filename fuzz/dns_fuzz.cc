// Fuzzes the DNS proxy's message handling: the input is split into a guest
// query and the upstream resolver's response (both hostile), fed through
// DnsAnswerer with a policy that allows a few names.
#include <cstddef>
#include <cstdint>
#include <string>

#include "egress/dns_answerer.h"

namespace {

class FixedUpstream : public airlock::egress::Upstream {
 public:
  std::string response;
  airlock::Result<std::string> exchange(const std::string& query) override {
    // Echo the query id so the response is considered, then the fuzzed bytes.
    std::string out = response;
    if (out.size() >= 2 && query.size() >= 2) out.replace(0, 2, query.substr(0, 2));
    return out;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace airlock::egress;
  static const Policy policy{Profile::kLocked, {*parseHostRule("api.example.com"), *parseHostRule("*.example.org")}};
  if (size < 2) return 0;
  size_t split = data[0] % (size - 1) + 1;
  std::string query(reinterpret_cast<const char*>(data) + 1, split - 1);
  FixedUpstream upstream;
  upstream.response.assign(reinterpret_cast<const char*>(data) + split, size - split);
  AddressBook book(std::chrono::seconds(1), std::chrono::seconds(60));
  DnsAnswerer answerer(policy, book, upstream);
  DnsOutcome outcome;
  (void)answerer.answer(query, &outcome);
  return 0;
}
