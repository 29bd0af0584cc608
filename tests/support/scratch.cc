#include "support/scratch.h"

#include <cstdio>
#include <cstdlib>

namespace airlock::test {

TempDir scratchDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  auto d = TempDir::create(tmp && *tmp ? tmp : "/tmp", prefix);
  if (!d) {
    std::fprintf(stderr, "cannot create a scratch directory: %s\n", d.error().message.c_str());
    std::abort();
  }
  return std::move(*d);
}

}  // namespace airlock::test
