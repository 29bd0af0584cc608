// `airlock snapshot`: a private copy of a workspace and its baseline manifest
// in a session directory of the user's choosing, for `airlock review -s DIR`.
//
//   airlock snapshot --workspace DIR --session SESSION
//       private copy + baseline manifest in SESSION (snapshot/, manifest, ignore)

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/repeatable.h"
#include "cli/report.h"
#include "workspace/linked_git_dir.h"
#include "common/exit_codes.h"
#include "common/paths.h"
#include "session/layout.h"
#include "session/session.h"
#include "workspace/gate.h"
#include "workspace/snapshot.h"

namespace airlock::cli {
namespace {

namespace ws = airlock::workspace;
using json = nlohmann::json;

struct SnapshotArgs {
  std::string workspace = ".";
  std::string session;
  std::vector<std::string> excludes;
  unsigned threads = 0;
  bool noReflink = false;
  bool json = false;
};

int runSnapshot(const HostContext& host, const SnapshotArgs& a) {
  if (a.session.empty()) return reportError(Error{"--session DIR is required (a new directory)", exit_code::kUsage});
  auto rules = ws::loadReviewRules(a.workspace, "", a.excludes);
  if (!rules) return reportError(rules.error());
  for (const auto& w : rules->warnings) std::fprintf(stderr, "airlock: warning: %s\n", w.c_str());
  session::SessionLayout layout{a.session};
  struct stat st {};
  bool existed = ::stat(a.session.c_str(), &st) == 0;
  if (existed && (!S_ISDIR(st.st_mode) || ::access(layout.manifest().c_str(), F_OK) == 0 ||
                  ::access(layout.snapshot().c_str(), F_OK) == 0))
    return reportError(Error{fmt::format("--session {} already holds a snapshot (or is not a directory); pass a new "
                                         "directory, or remove it first",
                                         a.session),
                             exit_code::kUsage});
  // An existing directory must be the user's own (not a symlink): another
  // user's /tmp/session made 0777 beforehand would let them read the copy
  // and swap its workspace record. It becomes private like a new one.
  struct stat own {};
  if (existed && (::lstat(a.session.c_str(), &own) != 0 || !S_ISDIR(own.st_mode) || own.st_uid != host.euid ||
                  ::chmod(a.session.c_str(), 0700) != 0))
    return reportError(Error{fmt::format("--session {} exists and is not a directory of yours; pass a new directory",
                                         a.session),
                             exit_code::kUsage});
  if (auto r = makeDirs(a.session, 0700); !r)
    return reportError(Error{fmt::format("cannot create the session directory {}: {}; pass a directory you can "
                                         "create",
                                         a.session, r.error().message),
                             exit_code::kUsage});
  // A failed snapshot leaves nothing behind: no half-made copy, no empty session.
  struct Partial {
    std::string path;
    bool keep = false;
    ~Partial() {
      if (!keep) (void)removeTree(path);
    }
  } partial{existed ? layout.snapshot() : a.session};
  ws::SnapshotOptions opt;
  opt.threads = a.threads;
  opt.reflink = !a.noReflink;
  bool tty = host.terminal.stderrTty && !a.json;
  opt.progress = [&](const ws::SnapshotProgress& p) {
    if (tty && p.filesTotal >= 5000)
      std::fprintf(stderr, "\rsnapshot: %llu/%llu files, %llu MiB", static_cast<unsigned long long>(p.filesDone),
                   static_cast<unsigned long long>(p.filesTotal), static_cast<unsigned long long>(p.bytesDone >> 20));
  };
  auto res = ws::snapshotWorkspace(a.workspace, layout.snapshot(), rules->rules, opt);
  if (tty) std::fprintf(stderr, "\r\x1b[K");
  if (!res) return reportError(res.error());
  if (auto r = res->manifest.save(layout.manifest()); !r) return reportError(r.error());
  if (auto r = writeFileAtomic(layout.ignore(), rules->rules.userText(), 0600); !r) return reportError(r.error());
  if (auto r = session::recordWorkspace(a.session, a.workspace); !r) return reportError(r.error());
  partial.keep = true;
  for (const auto& w : res->warnings) std::fprintf(stderr, "airlock: warning: %s\n", w.c_str());
  if (a.json) {
    json j = {{"session", a.session},   {"entries", res->manifest.size()}, {"bytes", res->bytes},
              {"reflinked", res->reflinked}, {"copied", res->copied},   {"excluded", res->excluded.size()},
              {"warnings", res->warnings}};
    std::printf("%s\n", j.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  } else {
    std::printf("snapshot of %s in %s: %zu entries, %llu MiB (%llu files reflinked, %llu copied), %zu excluded\n",
                a.workspace.c_str(), a.session.c_str(), res->manifest.size(),
                static_cast<unsigned long long>(res->bytes >> 20), static_cast<unsigned long long>(res->reflinked),
                static_cast<unsigned long long>(res->copied), res->excluded.size());
  }
  return 0;
}

}  // namespace

void addSnapshotCommand(CLI::App& app, int& exitCode, const HostContext& host) {
  auto snap = std::make_shared<SnapshotArgs>();
  CLI::App* s = app.add_subcommand("snapshot", "Copy a workspace into a session directory and record its baseline manifest");
  s->add_option("--workspace,-w", snap->workspace, "the project directory (default: .)");
  s->add_option("--session,-s", snap->session, "session directory to create/fill (snapshot/, manifest)")->required();
  repeatable(s->add_option("--exclude", snap->excludes, "extra ignore pattern (gitignore syntax); repeatable"));
  s->add_option("--threads", snap->threads, "copy threads (default: one per CPU)");
  s->add_flag("--no-reflink", snap->noReflink, "always copy bytes, never FICLONE");
  s->add_flag("--json", snap->json, "machine-readable output");
  s->callback([snap, &host, &exitCode] { exitCode = runSnapshot(host, *snap); });
}

}  // namespace airlock::cli
