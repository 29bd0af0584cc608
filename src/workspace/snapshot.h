#pragma once
// The snapshot: a private copy of the workspace in the session directory and
// the baseline manifest describing it. Files are copied in parallel, with a
// FICLONE reflink where the filesystem allows and a read/write copy
// otherwise; the same pass computes each file's SHA-256. Symlinks are copied
// as symlinks, never followed. FIFOs, sockets and device nodes are skipped
// with a warning and never opened. Excluded paths never enter the copy or
// the manifest ("kept out"), for one of these reasons:
//  - a built-in secret name or airlock's own config file (IgnoreRules),
//  - ignored by .airlockignore or --exclude,
//  - a hard link to a kept-out file: a regular file whose (st_dev, st_ino)
//    is that of a kept-out file anywhere in the workspace, including inside
//    kept-out directories (searched, lstat only, when some file has more
//    links than the walk found). A hard link to a file OUTSIDE the workspace
//    cannot be told from a harmless one by its inode (pnpm's store and local
//    git clones share inodes with outside files): it is copied, and its
//    content is checked like any other. A second name of a git file whose
//    copy is stripped (notes.txt linked to .git/config) is kept out the same way,
//  - a private key by content (private_key_scan.h), found in the bytes the
//    copy reads for the SHA-256 anyway; the copy is removed before the
//    snapshot is used.
//  - a git credential store file: one that a git config's
//    `credential.helper = store --file=PATH` names inside the workspace.
// Git config files, FETCH_HEAD and reflogs (git_credentials.h; bare
// repositories found by HEAD and objects/, included configs followed) are
// copied without the credentials in their URLs and secret keys; the manifest
// keeps the host file's digest.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "workspace/ignore.h"
#include "workspace/manifest.h"

namespace airlock::workspace {

/// Progress of a running snapshot or scan.
struct SnapshotProgress {
  uint64_t filesDone = 0;   ///< regular files copied/hashed so far
  uint64_t filesTotal = 0;  ///< regular files found by the walk
  uint64_t bytesDone = 0;   ///< bytes of content processed so far
};

/// Knobs for takeSnapshot() and scanTree().
struct SnapshotOptions {
  unsigned threads = 0;     ///< worker threads; 0 = one per CPU (at most 16)
  bool reflink = true;      ///< try FICLONE before copying (files of 64 KiB and more)
  /// Called from worker threads (serialized) about every 1,000 files.
  std::function<void(const SnapshotProgress&)> progress;
};

/// Why a path was kept out of the snapshot (see the file comment).
enum class KeptOutReason { SecretName, AirlockConfig, Ignored, HardLink, PrivateKey, GitCredentialStore, GitHooks };

/// A short phrase for messages: "secret name", "hard link to a kept-out file"...
const char* keptOutReasonText(KeptOutReason r);
/// A stable key for JSON: "secret_name", "airlock_config", "ignored", "hard_link", "private_key",
/// "git_credential_store", "git_hooks".
const char* keptOutReasonKey(KeptOutReason r);

/// One kept-out path (a directory stands for its contents).
struct KeptOut {
  std::string path;
  KeptOutReason reason;
};

/// What a snapshot or scan found.
struct SnapshotResult {
  Manifest manifest;
  std::vector<std::string> warnings;  ///< one sentence per skipped special file
  std::vector<KeptOut> excluded;      ///< kept-out paths, in walk order (scanTree(): names and ignores only)
  std::vector<std::string> gitCredentialsStripped;  ///< git config files copied without their credentials
  uint64_t reflinked = 0;             ///< files cloned with FICLONE
  uint64_t copied = 0;                ///< files copied byte by byte
  uint64_t bytes = 0;                 ///< total file content, bytes
};

/// Copies `workspace` into `destDir` (created; must not exist yet, its parent
/// must) and returns the baseline manifest. Fails naming the first path that
/// cannot be read or written (unreadable: exit_code::kHostNotReady, naming
/// --exclude PATH as the fix; `destDir` exists: kUsage), and then removes the
/// partial copy.
Result<SnapshotResult> takeSnapshot(const std::string& workspace, const std::string& destDir, const IgnoreRules& rules,
                                    const SnapshotOptions& options = {});

/// Like takeSnapshot() without copying: the manifest of `root` as it is now.
/// Only names and ignore rules exclude here (no hard-link or content checks):
/// this describes trees the agent wrote, too.
Result<SnapshotResult> scanTree(const std::string& root, const IgnoreRules& rules, const SnapshotOptions& options = {});

/// What takeSnapshot() would keep out of `workspace` (and which git config
/// files it would strip), without copying or hashing. Names, ignores and hard
/// links need only the walk (and the git configs, read for the credential
/// store files they name); `readFiles` also reads every file for private
/// keys and git credentials (the cost of a snapshot's reads). The manifest
/// is left empty.
Result<SnapshotResult> findKeptOut(const std::string& workspace, const IgnoreRules& rules, bool readFiles,
                                   const SnapshotOptions& options = {});

/// The one-line account of `res` for the user, e.g. "3 paths kept out of the
/// snapshot: 2 secret names, 1 private key; credentials and commands removed from 1 git
/// config file in the snapshot"; "" when nothing was kept out or changed.
std::string keptOutSummary(const SnapshotResult& res);

}  // namespace airlock::workspace
