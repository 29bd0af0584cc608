#include "workspace/git_import.h"

#include <fcntl.h>
#include <git2.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "common/c_ptr.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/visible_text.h"

namespace airlock::workspace {
namespace {

using Repo = CPtr<git_repository, git_repository_free>;
using Odb = CPtr<git_odb, git_odb_free>;
using OdbObject = CPtr<git_odb_object, git_odb_object_free>;
using Commit = CPtr<git_commit, git_commit_free>;
using Tree = CPtr<git_tree, git_tree_free>;
using Object = CPtr<git_object, git_object_free>;
using Reference = CPtr<git_reference, git_reference_free>;
using Walk = CPtr<git_revwalk, git_revwalk_free>;
using RefIterator = CPtr<git_reference_iterator, git_reference_iterator_free>;

/// libgit2's last error, for a message.
std::string gitError() {
  const git_error* e = git_error_last();
  return e && e->message ? e->message : "unknown libgit2 error";
}

std::string hex(const git_oid& id) {
  char buf[GIT_OID_HEXSZ + 1];
  git_oid_tostr(buf, sizeof buf, &id);
  return buf;
}

bool isHex40(const std::string& s) {
  return s.size() == 40 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// The first `max` bytes of a staged file ("" when unreadable).
std::string readSmall(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  std::string data(max, '\0');
  in.read(data.data(), static_cast<std::streamsize>(max));
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

/// The branches and tags of a packed-refs file's `text`, into `out`.
void parsePackedRefs(const std::string& text, std::map<std::string, std::string>& out) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.size() < 42 || line[40] != ' ') continue;  // "# pack-refs", "^peeled"
    std::string id = line.substr(0, 40), ref = line.substr(41);
    if (isHex40(id) && (ref.starts_with("refs/heads/") || ref.starts_with("refs/tags/"))) out[ref] = id;
  }
}

/// The id `ref` has in the repository at `gitDir` as files say (a loose
/// ref, else packed-refs); "" when it has none.
std::string refInFiles(const std::string& gitDir, const std::string& ref, std::map<std::string, std::string>& packed,
                       bool& packedRead) {
  std::string text = readSmall(gitDir + "/" + ref, 128);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (isHex40(text)) return text;
  if (!packedRead) {
    parsePackedRefs(readSmall(gitDir + "/packed-refs", 16 << 20), packed);
    packedRead = true;
  }
  auto it = packed.find(ref);
  return it == packed.end() ? "" : it->second;
}

/// True when the guest removed `.git/<ref>` (a whiteout of it or of a
/// directory above it, or an opaque directory above it that does not list it).
bool removedByGuest(const ChangeSet& changes, const std::string& ref) {
  const std::string path = ".git/" + ref;
  for (size_t slash = path.size(); slash != std::string::npos && slash > 0; slash = path.rfind('/', slash - 1)) {
    auto it = changes.changes().find(path.substr(0, slash));
    if (it == changes.changes().end()) continue;
    if (it->second.kind == Change::Kind::Whiteout) return true;
    if (slash != path.size() && it->second.opaque) return true;
  }
  return false;
}

/// The refs the guest's `.git` changed: name -> commit or tag id (hex).
/// Loose refs win over packed-refs, as in git; `packedOnly` gets the names
/// whose value comes from the guest's packed-refs alone.
std::map<std::string, std::string> changedRefs(const ChangeSet& changes, std::set<std::string>& packedOnly) {
  std::map<std::string, std::string> loose, packed;
  for (const auto& [path, change] : changes.changes()) {
    if (change.kind != Change::Kind::File || !path.starts_with(".git/")) continue;
    const std::string name = path.substr(5);
    if (name == "packed-refs") {
      parsePackedRefs(readSmall(changes.stagedPath(change), 16 << 20), packed);
      continue;
    }
    if (name != "HEAD" && !name.starts_with("refs/heads/") && !name.starts_with("refs/tags/")) continue;
    std::string text = readSmall(changes.stagedPath(change), 128);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (isHex40(text)) loose[name] = text;  // "ref: refs/heads/x" (a branch switch) is not a new commit
  }
  for (auto& [ref, id] : packed)
    if (loose.emplace(ref, id).second) packedOnly.insert(ref);
  std::map<std::string, std::string> out;
  for (auto& [ref, id] : loose) {
    int valid = 0;
    if (ref == "HEAD" || (git_reference_name_is_valid(&valid, ref.c_str()) == 0 && valid)) out.emplace(ref, id);
  }
  return out;
}

/// Bytes of address space this process maps now.
uint64_t mappedBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

/// Indexes the pack at `staged` (the guest's `path`) into `packDir` with
/// libgit2's indexer, in a child process held to limits.indexMemoryBytes
/// more address space and limits.indexSeconds of CPU: a few KiB of deltas
/// can expand to gigabytes. "" or why it was refused.
std::string indexPack(const std::string& staged, const std::string& path, const std::string& packDir, git_odb* odb,
                      const GitImportLimits& limits) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fmt::format("cannot index {}: {}", path, errnoText(errno));
  Fd readEnd(fds[0]), writeEnd(fds[1]);
  const uint64_t memory = mappedBytes() + limits.indexMemoryBytes;
  pid_t pid = ::fork();
  if (pid < 0) return fmt::format("cannot index {}: {}", path, errnoText(errno));
  if (pid == 0) {
    rlimit as{memory, memory}, cpu{limits.indexSeconds, limits.indexSeconds};
    ::setrlimit(RLIMIT_AS, &as);
    ::setrlimit(RLIMIT_CPU, &cpu);
    auto fail = [&](const std::string& why) {
      (void)writeAll(writeEnd.get(), why);
      ::_exit(1);
    };
    git_indexer_options opts;
    git_indexer_options_init(&opts, GIT_INDEXER_OPTIONS_VERSION);
    git_indexer* raw = nullptr;
    if (git_indexer_new(&raw, packDir.c_str(), 0, odb, &opts) != 0) fail("cannot index " + path + ": " + gitError());
    int in = ::open(staged.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) fail("cannot read " + path);
    git_indexer_progress progress{};
    static char buf[1 << 16];
    for (;;) {
      ssize_t n = ::read(in, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail("cannot read " + path);
      if (n == 0) break;
      if (git_indexer_append(raw, buf, static_cast<size_t>(n), &progress) != 0)
        fail(path + " is not a valid pack: " + gitError());
    }
    if (git_indexer_commit(raw, &progress) != 0) fail(path + " is not a valid pack: " + gitError());
    ::_exit(0);
  }
  writeEnd.reset();
  // Its message, until it exits; killed past twice its CPU time in wall time.
  std::string why;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2 * limits.indexSeconds);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{readEnd.get(), POLLIN, 0};
    int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      ::kill(pid, SIGKILL);
      break;
    }
    ssize_t n = ::read(readEnd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (why.size() < 4096) why.append(buf, static_cast<size_t>(n));
  }
  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (!why.empty()) return why;
  return fmt::format("{} is not a pack the import can take: indexing it needed more than {} MiB of memory or {} s",
                     path, limits.indexMemoryBytes >> 20, limits.indexSeconds);
}

/// Reads the header of every object in the guest's own files (not the
/// host's): counts, sizes and their sum within `limits`, before any object
/// is read whole. "" or why the import is refused.
std::string checkGuestObjectSizes(const std::string& objectsDir, const GitImportLimits& limits) {
  git_odb* raw = nullptr;
  if (git_odb_open(&raw, objectsDir.c_str()) != 0) return "cannot read the guest's objects: " + gitError();
  Odb guest(raw);
  struct Scan {
    git_odb* odb;
    const GitImportLimits* limits;
    size_t count = 0;
    uint64_t total = 0;
    std::string why;
  } scan{guest.get(), &limits};
  (void)git_odb_foreach(
      guest.get(),
      [](const git_oid* id, void* payload) -> int {
        auto* s = static_cast<Scan*>(payload);
        if (++s->count > s->limits->maxObjects) {
          s->why = fmt::format("the guest's repository has over {} objects, the import's limit", s->limits->maxObjects);
          return 1;
        }
        size_t size = 0;
        git_object_t type;
        if (git_odb_read_header(&size, &type, s->odb, id) != 0) return 0;  // refused when a ref needs it
        if (size > s->limits->maxObjectBytes) {
          s->why = fmt::format("object {} is {} MiB, over the import's limit of {} MiB", hex(*id).substr(0, 12),
                               size >> 20, s->limits->maxObjectBytes >> 20);
          return 1;
        }
        s->total += size;
        if (s->total > s->limits->maxInflatedBytes) {
          s->why = fmt::format("the guest's objects hold over {} MiB, the import's limit",
                               s->limits->maxInflatedBytes >> 20);
          return 1;
        }
        return 0;
      },
      &scan);
  return scan.why;
}

/// Copies the guest's object files into the scratch repository's object
/// store: loose objects under their names (libgit2 checks each one's hash
/// when it is read), packs through libgit2's indexer (which builds its own
/// index; the guest's .idx is never read). "" or why the import is refused.
std::string stageGuestObjects(const ChangeSet& changes, const std::string& objectsDir, git_odb* odb,
                              const GitImportLimits& limits) {
  uint64_t total = 0;
  for (const auto& [path, change] : changes.changes()) {
    if (change.kind != Change::Kind::File || !path.starts_with(".git/objects/")) continue;
    const std::string rest = path.substr(13);
    const bool loose = rest.size() == 41 && rest[2] == '/' && isHex40(rest.substr(0, 2) + rest.substr(3));
    const bool pack = rest.starts_with("pack/") && rest.ends_with(".pack") && rest.find('/', 5) == std::string::npos;
    if (!loose && !pack) continue;
    total += change.size;
    if (total > limits.maxTotalBytes)
      return fmt::format("the guest's git objects are over the import's limit of {} MiB", limits.maxTotalBytes >> 20);
    std::error_code ec;
    if (loose) {
      std::filesystem::create_directories(objectsDir + "/" + rest.substr(0, 2), ec);
      if (!std::filesystem::copy_file(changes.stagedPath(change), objectsDir + "/" + rest,
                                      std::filesystem::copy_options::overwrite_existing, ec))
        return fmt::format("cannot stage {}: {}", path, ec.message());
      continue;
    }
    if (auto why = indexPack(changes.stagedPath(change), path, objectsDir + "/pack", odb, limits); !why.empty())
      return why;
  }
  return "";
}

/// The first line of a commit message, escaped and cut to 100 characters.
std::string subject(git_commit* c) {
  const char* s = git_commit_summary(c);
  std::string text = s ? s : "";
  if (text.size() > 100) text = text.substr(0, 97) + "...";
  return visibleText(text);
}

/// The import of one ref: checks, then the objects and the ref.
class RefImport {
 public:
  RefImport(git_repository* host, git_repository* scratch, const GitImportLimits& limits)
      : host_(host), scratch_(scratch), limits_(limits) {
    git_odb* raw = nullptr;
    if (git_repository_odb(&raw, host_) == 0) hostOdb_.reset(raw);
    raw = nullptr;
    if (git_repository_odb(&raw, scratch_) == 0) scratchOdb_.reset(raw);
  }

  /// Fills `r` (tip and guestRef set) or its `refused`.
  void run(ImportedRef& r, const std::string& refPrefix, GitImportMode mode);

 private:
  bool hostHas(const git_oid& id) { return git_odb_exists(hostOdb_.get(), &id) == 1; }
  std::string checkTree(const git_oid& id, const std::string& where, std::set<std::string>& seen);
  std::string copyObjects();
  std::string hostHeadBranch();
  bool checkedOut(const std::string& branch);
  void updateBranch(ImportedRef& r, const git_oid& tip);

  git_repository* host_;
  git_repository* scratch_;
  const GitImportLimits& limits_;
  Odb hostOdb_, scratchOdb_;
  std::vector<git_oid> toCopy_;
};

std::string RefImport::checkTree(const git_oid& root, const std::string& where, std::set<std::string>& seen) {
  // A loop, not recursion: a guest can nest trees tens of thousands deep.
  std::vector<git_oid> pending{root};
  while (!pending.empty()) {
    const git_oid id = pending.back();
    pending.pop_back();
    if (hostHas(id) || !seen.insert(hex(id)).second) continue;
    git_tree* raw = nullptr;
    if (git_tree_lookup(&raw, scratch_, &id) != 0)
      return fmt::format("tree {} of {} is missing or malformed: {}", hex(id).substr(0, 12), where, gitError());
    Tree tree(raw);
    toCopy_.push_back(id);
    for (size_t i = 0, n = git_tree_entrycount(tree.get()); i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(tree.get(), i);
      const std::string name = git_tree_entry_name(e);
      if (isDotGitAlias(name))
        return fmt::format("{} has a path named {} (git metadata in a commit's tree)", where, visibleText(name));
      if (git_tree_entry_filemode(e) == GIT_FILEMODE_LINK && isGitmodulesName(name))
        return fmt::format("{} has a .gitmodules that is a symlink", where);
      const git_oid* child = git_tree_entry_id(e);
      if (git_tree_entry_type(e) == GIT_OBJECT_TREE) {
        pending.push_back(*child);
      } else if (git_tree_entry_type(e) == GIT_OBJECT_BLOB) {
        if (hostHas(*child) || !seen.insert(hex(*child)).second) continue;
        size_t size = 0;
        git_object_t type;
        if (git_odb_read_header(&size, &type, scratchOdb_.get(), child) != 0 || type != GIT_OBJECT_BLOB)
          return fmt::format("file {} of {} is missing or malformed", visibleText(name), where);
        if (size > limits_.maxObjectBytes)
          return fmt::format("file {} of {} is {} MiB, over the import's limit of {} MiB", visibleText(name), where,
                             size >> 20, limits_.maxObjectBytes >> 20);
        toCopy_.push_back(*child);
      }  // else a submodule's commit: not an object of this repository
    }
  }
  return "";
}

/// Reads every object to copy from the scratch store (hash-checked), and
/// only when all of them are sound writes them into the host's.
std::string RefImport::copyObjects() {
  for (const git_oid& id : toCopy_) {
    if (hostHas(id)) continue;
    git_odb_object* raw = nullptr;
    if (git_odb_read(&raw, scratchOdb_.get(), &id) != 0)
      return fmt::format("object {} is forged or unreadable: {}", hex(id).substr(0, 12), gitError());
    git_odb_object_free(raw);
  }
  for (const git_oid& id : toCopy_) {
    if (hostHas(id)) continue;
    git_odb_object* raw = nullptr;
    if (git_odb_read(&raw, scratchOdb_.get(), &id) != 0)
      return fmt::format("object {} is forged or unreadable: {}", hex(id).substr(0, 12), gitError());
    OdbObject obj(raw);
    git_oid written;
    if (git_odb_write(&written, hostOdb_.get(), git_odb_object_data(obj.get()), git_odb_object_size(obj.get()),
                      git_odb_object_type(obj.get())) != 0)
      return fmt::format("cannot write object {} into the repository: {}", hex(id).substr(0, 12), gitError());
    if (!git_oid_equal(&written, &id)) return fmt::format("object {} is forged", hex(id).substr(0, 12));
  }
  return "";
}

/// True when `branch` is checked out in the host's repository or any of its
/// linked worktrees (moving it would make their index and files look reverted).
bool RefImport::checkedOut(const std::string& branch) {
  git_reference* raw = nullptr;
  if (git_reference_lookup(&raw, host_, branch.c_str()) != 0) return false;
  Reference ref(raw);
  return git_branch_is_checked_out(ref.get()) == 1;
}

/// The branch the host's HEAD names, born or not ("" when it is detached).
std::string RefImport::hostHeadBranch() {
  git_reference* raw = nullptr;
  if (git_reference_lookup(&raw, host_, "HEAD") != 0) return "";
  Reference head(raw);
  if (git_reference_type(head.get()) != GIT_REFERENCE_SYMBOLIC) return "";
  return git_reference_symbolic_target(head.get());
}

void RefImport::updateBranch(ImportedRef& r, const git_oid& tip) {
  const std::string name = r.guestRef.substr(11);  // after "refs/heads/"
  git_oid current;
  if (git_reference_name_to_id(&current, host_, r.guestRef.c_str()) != 0) {
    if (hostHeadBranch() == r.guestRef) {  // an unborn branch: your files would show as staged deletions
      r.branch = fmt::format("{} not created: your HEAD names it (git merge --ff-only {})", name, r.hostRef);
      return;
    }
    git_reference* raw = nullptr;
    if (git_reference_create(&raw, host_, r.guestRef.c_str(), &tip, 0, "airlock: branch from the agent") != 0) {
      r.branch = fmt::format("not created: {}", gitError());
      return;
    }
    git_reference_free(raw);
    r.branch = fmt::format("created branch {}", name);
    return;
  }
  if (git_oid_equal(&current, &tip)) return;
  if (git_graph_descendant_of(host_, &tip, &current) != 1) {
    r.branch = fmt::format("{} not moved: not a fast-forward of yours", name);
    return;
  }
  if (checkedOut(r.guestRef)) {
    r.branch = fmt::format("{} not moved: it is checked out (git merge --ff-only {})", name, r.hostRef);
    return;
  }
  git_reference* raw = nullptr;
  if (git_reference_create_matching(&raw, host_, r.guestRef.c_str(), &tip, 1, &current,
                                    "airlock: fast-forward from the agent") != 0) {
    r.branch = fmt::format("{} not moved: {}", name, gitError());
    return;
  }
  git_reference_free(raw);
  r.branch = fmt::format("fast-forwarded branch {}", name);
}

void RefImport::run(ImportedRef& r, const std::string& refPrefix, GitImportMode mode) {
  toCopy_.clear();
  git_oid tipId;
  git_oid_fromstr(&tipId, r.tip.c_str());
  git_object* rawObj = nullptr;
  if (git_object_lookup(&rawObj, scratch_, &tipId, GIT_OBJECT_ANY) != 0) {
    r.refused = fmt::format("its commit {} is missing or malformed: {}", r.tip.substr(0, 12), gitError());
    return;
  }
  Object tipObj(rawObj);
  git_object* peeled = nullptr;
  if (git_object_peel(&peeled, tipObj.get(), GIT_OBJECT_COMMIT) != 0) {
    r.refused = fmt::format("{} does not lead to a commit: {}", r.tip.substr(0, 12), gitError());
    return;
  }
  Object commitObj(peeled);
  const git_oid commitId = *git_object_id(commitObj.get());
  // Every tag of a chain (a tag of a tag) comes along, not only the outer one.
  int tags = 0;
  for (git_oid tag = tipId; git_odb_exists(scratchOdb_.get(), &tag) == 1;) {
    size_t size = 0;
    git_object_t type;
    if (git_odb_read_header(&size, &type, scratchOdb_.get(), &tag) != 0 || type != GIT_OBJECT_TAG) break;
    git_object* rawTag = nullptr;
    if (git_object_lookup(&rawTag, scratch_, &tag, GIT_OBJECT_TAG) != 0) break;
    Object t(rawTag);
    if (!hostHas(tag)) toCopy_.push_back(tag);
    tag = *git_tag_target_id(reinterpret_cast<git_tag*>(t.get()));
    if (++tags > 64) {
      r.refused = "its tag is a chain of more than 64 tags";
      return;
    }
  }

  // Moved backwards: the host's ref of the same name already contains it.
  git_oid hostTip;
  const bool hostHasRef = git_reference_name_to_id(&hostTip, host_, r.guestRef.c_str()) == 0;
  if (hostHasRef && !git_oid_equal(&hostTip, &tipId) && hostHas(commitId) &&
      git_graph_descendant_of(host_, &hostTip, &commitId) == 1) {
    r.refused = fmt::format("it moved backwards, to {}, an ancestor of yours", r.tip.substr(0, 12));
    return;
  }

  // The name it lands under is checked before anything is written.
  const std::string suffix = r.guestRef == "HEAD" ? "HEAD" : r.guestRef.substr(5);  // heads/x, tags/x
  const std::string hostRef = refPrefix + suffix;
  int validName = 0;
  if (git_reference_name_is_valid(&validName, hostRef.c_str()) != 0 || !validName) {
    r.refused = fmt::format("{} is not a valid ref name", hostRef);
    return;
  }

  // The new commits: reachable from the tip, not from any host ref.
  git_revwalk* rawWalk = nullptr;
  if (git_revwalk_new(&rawWalk, scratch_) != 0) {
    r.refused = gitError();
    return;
  }
  Walk walk(rawWalk);
  // No sorting: any sort makes libgit2 walk all new history before the first commit.
  git_revwalk_sorting(walk.get(), GIT_SORT_NONE);
  if (git_revwalk_push(walk.get(), &commitId) != 0) {
    r.refused = fmt::format("its commit {} cannot be read: {}", r.tip.substr(0, 12), gitError());
    return;
  }
  git_reference_iterator* rawIt = nullptr;
  if (git_reference_iterator_new(&rawIt, host_) == 0) {
    RefIterator it(rawIt);
    git_reference* ref = nullptr;
    while (git_reference_next(&ref, it.get()) == 0) {
      Reference owned(ref);
      // This session's own refs (an earlier review of it) do not make its commits old.
      if (std::string_view(git_reference_name(owned.get())).starts_with(refPrefix)) continue;
      git_reference* resolved = nullptr;
      if (git_reference_resolve(&resolved, owned.get()) != 0) continue;
      Reference res(resolved);
      git_object* target = nullptr;
      if (git_reference_peel(&target, res.get(), GIT_OBJECT_COMMIT) != 0) continue;
      Object t(target);
      (void)git_revwalk_hide(walk.get(), git_object_id(t.get()));
    }
  }
  std::set<std::string> seen;
  git_oid id;
  int rc;
  while ((rc = git_revwalk_next(&id, walk.get())) == 0) {
    if (++r.newCommits > limits_.maxCommits) {
      r.refused = fmt::format("it has more than {} new commits", limits_.maxCommits);
      return;
    }
    git_commit* rawCommit = nullptr;
    if (git_commit_lookup(&rawCommit, scratch_, &id) != 0) {
      r.refused = fmt::format("commit {} is missing or malformed: {}", hex(id).substr(0, 12), gitError());
      return;
    }
    Commit c(rawCommit);
    if (r.log.size() < 10) r.log.push_back(hex(id).substr(0, 7) + " " + subject(c.get()));
    const std::string where = "commit " + hex(id).substr(0, 12);
    if (auto why = checkTree(*git_commit_tree_id(c.get()), where, seen); !why.empty()) {
      r.refused = why;
      return;
    }
    toCopy_.push_back(id);
  }
  if (rc != GIT_ITEROVER) {
    r.refused = fmt::format("its history cannot be read (a missing or forged object): {}", gitError());
    return;
  }
  if (auto why = copyObjects(); !why.empty()) {
    r.refused = why;
    return;
  }

  // Where it builds on: the host's branch of the same name, else its HEAD.
  std::string baseRef = hostHasRef && r.guestRef.starts_with("refs/heads/") ? r.guestRef : hostHeadBranch();
  git_oid baseTip, mergeBase;
  if (!baseRef.empty() && git_reference_name_to_id(&baseTip, host_, baseRef.c_str()) == 0 &&
      git_merge_base(&mergeBase, host_, &baseTip, &commitId) == 0) {
    std::string shortName = baseRef.starts_with("refs/heads/") ? baseRef.substr(11) : baseRef;
    r.base = visibleText(shortName) + "@" + hex(mergeBase).substr(0, 7);
  }

  git_reference* created = nullptr;
  if (git_reference_create(&created, host_, hostRef.c_str(), &tipId, 1, "airlock: the agent's ref") != 0) {
    r.refused = fmt::format("cannot create {}: {}", hostRef, gitError());
    return;
  }
  git_reference_free(created);
  r.hostRef = hostRef;
  if (mode == GitImportMode::kBranches && r.guestRef.starts_with("refs/heads/")) updateBranch(r, commitId);
}

/// Strips the UTF-8 encodings of the code points HFS+ ignores in names.
std::string withoutHfsIgnorables(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    auto b = [&](size_t k) { return static_cast<unsigned char>(name[i + k]); };
    if (i + 2 < name.size()) {
      const unsigned c0 = b(0), c1 = b(1), c2 = b(2);
      const bool ignorable = (c0 == 0xE2 && c1 == 0x80 && ((c2 >= 0x8C && c2 <= 0x8F) || (c2 >= 0xAA && c2 <= 0xAE))) ||
                             (c0 == 0xE2 && c1 == 0x81 && c2 >= 0xAA && c2 <= 0xAF) ||
                             (c0 == 0xEF && c1 == 0xBB && c2 == 0xBF);
      if (ignorable) {
        i += 2;
        continue;
      }
    }
    out += name[i];
  }
  return out;
}

}  // namespace

Result<GitImportMode> parseGitImportMode(const std::string& text) {
  if (text == "none") return GitImportMode::kNone;
  if (text == "refs-only") return GitImportMode::kRefsOnly;
  if (text == "branches") return GitImportMode::kBranches;
  return failWith(exit_code::kUsage, "--git must be none, refs-only or branches, not '{}'", visibleText(text));
}

bool isDotGitAlias(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) return true;
  // NTFS reads "\\" as a separator and drops an alternate data stream
  // (":$INDEX_ALLOCATION") and trailing dots and spaces of each component.
  std::string s = withoutHfsIgnorables(name);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('\\', start);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(start, end - start);
    if (size_t colon = part.find(':'); colon != std::string::npos) part.resize(colon);
    if (part == "." || part == "..") return true;
    while (!part.empty() && (part.back() == '.' || part.back() == ' ')) part.pop_back();
    part = asciiLower(part);
    if (part == ".git" || part == "git~1") return true;
    start = end + 1;
  }
  return false;
}

bool isGitmodulesName(const std::string& name) {
  std::string s = withoutHfsIgnorables(name);
  if (size_t colon = s.find(':'); colon != std::string::npos) s.resize(colon);
  while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
  s = asciiLower(s);
  return s == ".gitmodules" || s == "gitmod~1";
}

Result<GitImport> importAgentCommits(const ChangeSet& changes, const std::string& gitDir,
                                     const std::string& baselineGitDir, const std::string& refPrefix,
                                     GitImportMode mode, const std::string& scratch, const GitImportLimits& limits) {
  GitImport out;
  if (mode == GitImportMode::kNone) return out;
  std::set<std::string> packedOnly;
  auto refs = changedRefs(changes, packedOnly);
  // A ref the guest left at the snapshot's value is not news (a `git gc` or
  // `branch -d` in the guest rewrites packed-refs whole), and neither is a
  // packed value under the snapshot's loose ref the guest kept.
  if (!baselineGitDir.empty()) {
    std::map<std::string, std::string> packed;
    bool packedRead = false;
    for (auto it = refs.begin(); it != refs.end();) {
      const std::string& ref = it->first;
      const bool shadowed = packedOnly.count(ref) && !removedByGuest(changes, ref) &&
                            isHex40(readSmall(baselineGitDir + "/" + ref, 41).substr(0, 40));
      it = ref != "HEAD" && (shadowed || refInFiles(baselineGitDir, ref, packed, packedRead) == it->second)
               ? refs.erase(it)
               : std::next(it);
    }
  }
  if (refs.empty()) return out;
  static std::once_flag once;
  std::call_once(once, [] { git_libgit2_init(); });

  git_repository* rawHost = nullptr;
  if (git_repository_open_ext(&rawHost, gitDir.c_str(), GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE,
                              nullptr) != 0)
    return failWith(exit_code::kInternal, "cannot open the repository {}: {}", gitDir, gitError());
  Repo host(rawHost);
  // Refs the guest left as the host has them are not news.
  for (auto it = refs.begin(); it != refs.end();) {
    git_oid current;
    if (it->first != "HEAD" && git_reference_name_to_id(&current, host.get(), it->first.c_str()) == 0 &&
        hex(current) == it->second)
      it = refs.erase(it);
    else if (it->first == "HEAD" && git_reference_name_to_id(&current, host.get(), "HEAD") == 0 &&
             hex(current) == it->second)
      it = refs.erase(it);
    else
      ++it;
  }
  if (refs.empty()) return out;
  if (refs.size() > limits.maxRefs) {
    out.refused = fmt::format("the agent changed {} refs, over the import's limit of {}", refs.size(), limits.maxRefs);
    return out;
  }

  git_repository* rawScratch = nullptr;
  if (git_repository_init(&rawScratch, scratch.c_str(), 1) != 0)
    return failWith(exit_code::kInternal, "cannot create a scratch repository in {}: {}", scratch, gitError());
  Repo scratchRepo(rawScratch);
  git_odb* rawOdb = nullptr;
  if (git_repository_odb(&rawOdb, scratchRepo.get()) != 0)
    return failWith(exit_code::kInternal, "cannot open the scratch object store: {}", gitError());
  Odb scratchOdb(rawOdb);
  // A linked worktree's objects are its common directory's.
  const std::string objects = std::string(git_repository_commondir(host.get())) + "/objects";
  if (git_odb_add_disk_alternate(scratchOdb.get(), objects.c_str()) != 0)
    return failWith(exit_code::kInternal, "cannot read the objects of {}: {}", gitDir, gitError());
  if (auto why = stageGuestObjects(changes, scratch + "/objects", scratchOdb.get(), limits); !why.empty()) {
    out.refused = visibleText(why);
    return out;
  }
  if (auto why = checkGuestObjectSizes(scratch + "/objects", limits); !why.empty()) {
    out.refused = visibleText(why);
    return out;
  }

  RefImport importer(host.get(), scratchRepo.get(), limits);
  for (const auto& [name, id] : refs) {
    ImportedRef r;
    r.guestRef = name;
    r.tip = id;
    importer.run(r, refPrefix, mode);
    // Names, libgit2's messages and pack file names in these come from the guest.
    r.refused = visibleText(r.refused);
    r.branch = visibleText(r.branch);
    out.refs.push_back(std::move(r));
  }
  return out;
}

}  // namespace airlock::workspace
