// libFuzzer target for the change-set parser (OCI layer tar via libarchive):
// any input must either parse into a change set whose paths are all
// normalized and relative, or fail with an error; it must never crash,
// hang, or write outside the staging directory.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/paths.h"
#include "workspace/changeset.h"
#include "workspace/relpath.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string base = [] {
    // Under $TMPDIR: scripts/fuzz gives each run a scratch directory it removes.
    const char* tmp = std::getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/airlock-changeset-fuzz-" + std::to_string(::getpid());
    (void)airlock::makeDirs(t, 0700);
    return t;
  }();
  std::string staging = base + "/staged";
  (void)airlock::removeTree(staging);
  airlock::workspace::TarLimits limits;
  limits.maxEntryBytes = 1 << 20;
  limits.maxTotalBytes = 4 << 20;
  limits.maxEntries = 10000;
  auto cs = airlock::workspace::ChangeSet::fromTarBuffer(
      std::string_view(reinterpret_cast<const char*>(data), size), staging, limits);
  if (cs) {
    for (const auto& [path, change] : cs->changes()) {
      auto norm = airlock::workspace::normalizeRelative(path);
      if (!path.empty() && (!norm || *norm != path)) std::abort();
      if (change.kind == airlock::workspace::Change::Kind::File && change.sha256.size() != 64) std::abort();
    }
  }
  (void)airlock::removeTree(staging);
  return 0;
}
