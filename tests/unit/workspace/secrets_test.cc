// Secrets that must not reach the guest (issue 12 item 11): the snapshot's
// content and hard-link checks, git credentials in the snapshot copy, and the
// account of what was kept out. Markers are built by concatenation so this
// file itself holds none.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "common/encoding.h"
#include "common/sha256.h"
#include "test_util.h"
#include "workspace/git_credentials.h"
#include "workspace/private_key_scan.h"

namespace airlock::workspace {
namespace {

using test::readAll;
using test::scratch;
using test::writeFile;
namespace fs = std::filesystem;

const std::string kPemKey = std::string("-----BEGIN ") + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n" +
                            "-----END " + "OPENSSH PRIVATE KEY-----\n";

/// Every file below `root` whose content contains `needle` (relative paths).
std::vector<std::string> filesContaining(const std::string& root, const std::string& needle) {
  std::vector<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && readAll(e.path()).find(needle) != std::string::npos)
      out.push_back(fs::relative(e.path(), root).string());
  return out;
}

bool keptOutAs(const SnapshotResult& r, const std::string& path, KeptOutReason why) {
  for (const auto& k : r.excluded)
    if (k.path == path) return k.reason == why;
  return false;
}

// `notes.txt -> .env` (a second name for the same inode): its content was readable in the guest.
TEST(SnapshotSecrets, HardLinkToEnvUnderAnotherNameIsKeptOut) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  writeFile(ws + "/.env", "API_TOKEN=s3cr3t-value\n");
  fs::create_directories(ws + "/docs");
  ASSERT_EQ(::link((ws + "/.env").c_str(), (ws + "/docs/notes.md").c_str()), 0);
  writeFile(ws + "/keep.txt", "keep");
  auto r = takeSnapshot(ws, d.path() + "/snap", IgnoreRules{});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->manifest.find("docs/notes.md"));
  EXPECT_FALSE(fs::exists(d.path() + "/snap/docs/notes.md"));
  EXPECT_TRUE(filesContaining(d.path() + "/snap", "s3cr3t").empty());
  EXPECT_TRUE(keptOutAs(*r, "docs/notes.md", KeptOutReason::HardLink));
  EXPECT_TRUE(r->manifest.find("keep.txt"));
}

// The kept-out file is inside a kept-out directory the walk never enters.
TEST(SnapshotSecrets, HardLinkToAFileInsideASecretDirectoryIsKeptOut) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  writeFile(ws + "/.aws/credentials", "aws_secret_access_key=AKIAsecret\n");
  ASSERT_EQ(::link((ws + "/.aws/credentials").c_str(), (ws + "/innocent.ini").c_str()), 0);
  // Two names inside the workspace, both included: a hard link among kept files is copied.
  writeFile(ws + "/a.txt", "shared");
  ASSERT_EQ(::link((ws + "/a.txt").c_str(), (ws + "/b.txt").c_str()), 0);
  auto r = takeSnapshot(ws, d.path() + "/snap", IgnoreRules{});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(fs::exists(d.path() + "/snap/innocent.ini"));
  EXPECT_TRUE(filesContaining(d.path() + "/snap", "AKIAsecret").empty());
  EXPECT_TRUE(keptOutAs(*r, "innocent.ini", KeptOutReason::HardLink));
  EXPECT_EQ(readAll(d.path() + "/snap/a.txt"), "shared");
  EXPECT_EQ(readAll(d.path() + "/snap/b.txt"), "shared");
}

// A private key in a file whose name says nothing: found by its header.
TEST(SnapshotSecrets, PrivateKeyInNotesTxtIsKeptOut) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  writeFile(ws + "/notes.txt", "my server key, do not lose:\n" + kPemKey + "more notes\n");
  // Inside JSON, with "\n" escapes (a service account key under another name).
  writeFile(ws + "/cfg/sa.dat",
            std::string("{\"private_key\": \"-----BEGIN ") + "PRIVATE KEY-----\\nMIIEv\\n\"}");
  writeFile(ws + "/id.putty", std::string("PuTTY-User-") + "Key-File-2: ssh-rsa\nEncryption: none\n");
  writeFile(ws + "/age.txt", std::string("# created\nAGE-SECRET-") + "KEY-1QQQQ\n");
  writeFile(ws + "/pgp.txt", std::string("-----BEGIN ") + "PGP PRIVATE KEY BLOCK-----\n\nlQ\n");
  // Large enough to be cloned where FICLONE works; the marker straddles a 128 KiB read.
  std::string big(131072 - 20, 'x');
  big += std::string("-----BEGIN ") + "RSA PRIVATE KEY-----\nMIIE\n" + std::string(70000, 'y');
  writeFile(ws + "/big.bin", big);
  // Mentions that are not keys stay.
  writeFile(ws + "/README.md", std::string("-----BEGIN ") + "PUBLIC KEY-----\n-----BEGIN " +
                                   "CERTIFICATE-----\nput your PRIVATE KEY in ~/.ssh\nBEGIN PRIVATE KEY\n");
  auto r = takeSnapshot(ws, d.path() + "/snap", IgnoreRules{});
  ASSERT_TRUE(r) << r.error().message;
  for (const char* p : {"notes.txt", "cfg/sa.dat", "id.putty", "age.txt", "pgp.txt", "big.bin"}) {
    EXPECT_FALSE(fs::exists(d.path() + "/snap/" + p)) << p;
    EXPECT_FALSE(r->manifest.find(p)) << p;
    EXPECT_TRUE(keptOutAs(*r, p, KeptOutReason::PrivateKey)) << p;
  }
  EXPECT_TRUE(filesContaining(d.path() + "/snap", "PRIVATE KEY-----").empty());
  EXPECT_TRUE(r->manifest.find("README.md"));
  EXPECT_TRUE(fs::exists(d.path() + "/snap/README.md"));
  EXPECT_TRUE(r->manifest.find("cfg")) << "the directory stays, only the file goes";
}

TEST(SnapshotSecrets, PrivateKeyMarkerSplitAcrossEveryChunkBoundaryIsFound) {
  for (size_t cut = 0; cut <= kPemKey.size(); ++cut) {
    PrivateKeyScanner scan;
    scan.feed("prefix text ");
    scan.feed(std::string_view(kPemKey).substr(0, cut));
    scan.feed(std::string_view(kPemKey).substr(cut));
    EXPECT_TRUE(scan.found()) << cut;
  }
  PrivateKeyScanner bytewise;
  for (char c : kPemKey) bytewise.feed(std::string_view(&c, 1));
  EXPECT_TRUE(bytewise.found());
  EXPECT_FALSE(hasPrivateKeyMarker(std::string("-----BEGIN ") + "lower private key"));
  EXPECT_FALSE(hasPrivateKeyMarker(std::string("-----BEGIN ") + "X509 CRL-----\nPRIVATE KEY"));
}

// a06: a base64-wrapped PEM key (a Kubernetes secret's tls.key) and SSH2 keys reached the guest.
TEST(SnapshotSecrets, Base64WrappedAndSsh2PrivateKeysAreKeptOut) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  // Each of the three alignments of the marker inside the base64 text.
  for (int pad = 0; pad < 3; ++pad)
    writeFile(ws + "/k8s/secret" + std::to_string(pad) + ".yaml",
              "data:\n  tls.key: " + base64Encode(std::string(static_cast<size_t>(pad), '#') + kPemKey) + "\n");
  writeFile(ws + "/k_ssh2.txt", std::string("---- BEGIN ") + "SSH2 ENCRYPTED PRIVATE KEY ----\nabc\n");
  writeFile(ws + "/k_ssh2b.txt", std::string("-----BEGIN ") + "SSH2 PRIVATE KEY-----\nabc\n");
  // base64 of public material stays.
  writeFile(ws + "/cert.yaml", "tls.crt: " + base64Encode(std::string("-----BEGIN ") + "CERTIFICATE-----\nMIIB\n") +
                                   "\npub: " + base64Encode(std::string("-----BEGIN ") + "PUBLIC KEY-----\n") + "\n");
  auto r = takeSnapshot(ws, d.path() + "/snap", IgnoreRules{});
  ASSERT_TRUE(r) << r.error().message;
  for (const char* p : {"k8s/secret0.yaml", "k8s/secret1.yaml", "k8s/secret2.yaml", "k_ssh2.txt", "k_ssh2b.txt"}) {
    EXPECT_FALSE(fs::exists(d.path() + "/snap/" + p)) << p;
    EXPECT_TRUE(keptOutAs(*r, p, KeptOutReason::PrivateKey)) << p;
  }
  EXPECT_TRUE(fs::exists(d.path() + "/snap/cert.yaml"));
  // Split across chunks, byte by byte.
  std::string b64 = base64Encode(kPemKey);
  PrivateKeyScanner bytewise;
  for (char c : b64) bytewise.feed(std::string_view(&c, 1));
  EXPECT_TRUE(bytewise.found());
}

// A token in a .git/config remote URL reached the guest.
TEST(SnapshotSecrets, TokenInGitConfigRemoteUrlIsStrippedFromTheCopyOnly) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  const std::string config =
      "[core]\n\trepositoryformatversion = 0\n"
      "[remote \"origin\"]\n\turl = https://user:ghp_TOKEN1@github.com/o/r.git\n"
      "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
      "[remote \"mirror\"]\n\turl = https://TOKEN2@gitlab.example.com/o/r.git\n"
      "\tpushurl = ssh://git:TOKEN3@host.example/o/r.git\n"
      "[url \"https://x-access-token:TOKEN4@github.com/\"]\n\tinsteadOf = https://github.com/\n"
      "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic TOKEN5\n"
      "[sendemail]\n\tsmtpPass = TOKEN6\n"
      "[github]\n\ttoken = TOKEN7\n"
      "[remote \"plain\"]\n\turl = git@github.com:o/r.git\n";
  writeFile(ws + "/.git/config", config);
  writeFile(ws + "/sub/.git/modules/lib/config", "[remote \"origin\"]\n\turl = https://a:TOKEN8@host/x\n");
  writeFile(ws + "/src/config", "url = https://keep:me@example.com/\n");  // not a git config
  auto r = takeSnapshot(ws, d.path() + "/snap", IgnoreRules{});
  ASSERT_TRUE(r) << r.error().message;
  std::string copy = readAll(d.path() + "/snap/.git/config");
  EXPECT_EQ(copy.find("TOKEN"), std::string::npos) << copy;
  EXPECT_NE(copy.find("url = https://github.com/o/r.git\n"), std::string::npos) << copy;
  EXPECT_NE(copy.find("url = https://gitlab.example.com/o/r.git\n"), std::string::npos) << copy;
  EXPECT_NE(copy.find("pushurl = ssh://git@host.example/o/r.git\n"), std::string::npos) << copy;
  EXPECT_EQ(copy.find("[url"), std::string::npos) << "url rewrites are not a repository's to keep: " << copy;
  EXPECT_NE(copy.find("url = git@github.com:o/r.git\n"), std::string::npos) << copy;
  EXPECT_NE(copy.find("fetch = +refs/heads/*:refs/remotes/origin/*\n"), std::string::npos) << copy;
  EXPECT_EQ(readAll(d.path() + "/snap/sub/.git/modules/lib/config").find("TOKEN"), std::string::npos);
  EXPECT_EQ(readAll(d.path() + "/snap/src/config"), "url = https://keep:me@example.com/\n");
  // The host's file is untouched and the baseline describes it, not the copy.
  EXPECT_EQ(readAll(ws + "/.git/config"), config);
  EXPECT_EQ(r->manifest.find(".git/config")->sha256, sha256Hex(config));
  EXPECT_EQ(r->gitCredentialsStripped, (std::vector<std::string>{".git/config", "sub/.git/modules/lib/config"}));
}

TEST(SnapshotSecrets, GitCredentialStrippingKeepsOtherLinesByteForByte) {
  size_t edits = 0;
  std::string text = "[remote \"o\"]\r\n\turl = https://host/x\r\n# https://u:p@host in a comment\n"
                     "\textraHeader = X-Token: a \\\n continued\n[core]\n\tbare = false";
  std::string out = stripGitCredentials(text, edits);
  EXPECT_EQ(edits, 2u);
  EXPECT_EQ(out, "[remote \"o\"]\r\n\turl = https://host/x\r\n# https://host in a comment\n[core]\n\tbare = false");
  EXPECT_EQ(stripGitCredentials("[core]\n\tbare = false\n", edits), "[core]\n\tbare = false\n");
  EXPECT_EQ(edits, 0u);
  EXPECT_TRUE(isGitConfigPath(".git/config"));
  EXPECT_TRUE(isGitConfigPath("a/.git/worktrees/w/config.worktree"));
  EXPECT_FALSE(isGitConfigPath("config"));
  EXPECT_FALSE(isGitConfigPath("src/.github/config"));
  EXPECT_TRUE(isGitConfigPath("mirror.git/config"));
  EXPECT_FALSE(isGitConfigPath("site.git/src/config"));
  EXPECT_EQ(gitFileKind(".git/modules/a/logs/HEAD"), GitFileKind::UrlsOnly);
  EXPECT_EQ(gitFileKind("docs/logs/x"), GitFileKind::None);
}

// A repository's config in the snapshot keeps what git needs to work on it
// and nothing that runs a program on the guest's side of git, reads a file
// outside the repository or carries a credential (issue 18, item 1).
TEST(SnapshotSecrets, ARepositorysConfigKeepsOnlyWhatGitNeeds) {
  const std::string config =
      "# set up by ci; token: TOKEN1\n"
      "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
      "\tsshCommand = ssh -i ~/.ssh/deploy\n\tfsmonitor = .git/hooks/fsmonitor\n\thooksPath = tools/hooks\n"
      "\tpager = less\n\teditor = vim\n\tALTERNATEREFSCOMMAND = x\n\taskPass = /bin/askpass\n"
      "\tattributesFile = ~/.gitattributes\n\tlogallrefupdates = true\n"
      "[extensions]\n\tobjectFormat = sha256\n"
      "[remote \"origin\"]\n\turl = git@github.com:o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
      "\tuploadpack = /tmp/evil\n\treceivepack = /tmp/evil\n\tvcs = evil\n"
      "[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
      "[user]\n\tname = Ada\n\temail = ada@example.com\n\tsigningkey = ABCD\n"
      "[alias]\n\tst = !sh -c evil\n"
      "[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n"
      "[diff \"img\"]\n\ttextconv = exiftool\n"
      "[diff]\n\texternal = /tmp/evil\n\talgorithm = histogram\n"
      "[merge \"ours\"]\n\tdriver = true\n"
      "[merge]\n\tconflictstyle = diff3\n"
      "[submodule \"lib\"]\n\turl = ../lib.git\n\tupdate = !rm -rf /\n\tactive = true\n"
      "[init]\n\ttemplateDir = ~/.git-templates\n\tdefaultBranch = main\n"
      "[include]\n\tpath = ~/.gitconfig.local\n"
      "[includeIf \"gitdir:~/w/\"]\n\tpath = x.inc\n"
      "[url \"git@github.com:\"]\n\tinsteadOf = https://github.com/\n"
      "[http]\n\tproxy = http://proxy:3128\n"
      "[credential]\n\thelper = osxkeychain\n"
      "[gpg]\n\tprogram = /tmp/evil\n"
      "[core]\n\tignorecase = false\n";
  size_t edits = 0;
  std::string out = sanitizeRepoConfig(config, edits);
  EXPECT_EQ(out,
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
            "[extensions]\n\tobjectFormat = sha256\n"
            "[remote \"origin\"]\n\turl = git@github.com:o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
            "[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
            "[user]\n\tname = Ada\n\temail = ada@example.com\n"
            "[diff]\n\talgorithm = histogram\n"
            "[merge]\n\tconflictstyle = diff3\n"
            "[submodule \"lib\"]\n\turl = ../lib.git\n\tactive = true\n"
            "[init]\n\tdefaultBranch = main\n"
            "[core]\n\tignorecase = false\n");
  EXPECT_GT(edits, 20u);
  // A config with nothing to drop is left byte for byte; a key on the header's line is judged too.
  const std::string clean = "[core]\r\n\tbare = false\r\n\n[branch \"x\"]\n\tremote = o";
  EXPECT_EQ(sanitizeRepoConfig(clean, edits), clean);
  EXPECT_EQ(edits, 0u);
  EXPECT_EQ(sanitizeRepoConfig("[core] fsmonitor = x\n[core] bare = true\n", edits), "[core]\n\tbare = true\n");
  // The old [section.sub] form is a subsection too.
  EXPECT_EQ(sanitizeRepoConfig("[diff.img]\n\ttextconv = x\n[remote.o]\n\turl = u\n", edits),
            "[remote.o]\n\turl = u\n");
}

// Git hooks never enter the snapshot: git in the VM would run them when the
// agent commits (issue 18, item 1). A project's own `hooks` directories stay.
TEST(SnapshotSecrets, GitHooksAreKeptOutOfTheSnapshot) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  writeFile(ws + "/.git/HEAD", "ref: refs/heads/main\n");
  fs::create_directories(ws + "/.git/objects");
  writeFile(ws + "/.git/hooks/pre-commit", "#!/bin/sh\necho host hook\n");
  writeFile(ws + "/.git/hooks/pre-push.sample", "#!/bin/sh\n");
  writeFile(ws + "/.git/info/exclude", "*.o\n");
  writeFile(ws + "/.git/modules/lib/HEAD", "ref: refs/heads/main\n");
  writeFile(ws + "/.git/modules/lib/hooks/post-checkout", "#!/bin/sh\n");
  writeFile(ws + "/mirror.git/hooks/update", "#!/bin/sh\n");
  writeFile(ws + "/store/HEAD", "ref: refs/heads/main\n");
  fs::create_directories(ws + "/store/objects");
  writeFile(ws + "/store/hooks/pre-receive", "#!/bin/sh\n");
  writeFile(ws + "/src/hooks/useAuth.ts", "export {}\n");       // a React project's hooks
  writeFile(ws + "/tools/hooks/pre-commit", "#!/bin/sh\n");     // not a repository's
  auto r = takeSnapshot(ws, d.path() + "/snap", IgnoreRules{});
  ASSERT_TRUE(r) << r.error().message;
  for (const char* gone : {".git/hooks", ".git/modules/lib/hooks", "mirror.git/hooks", "store/hooks"}) {
    EXPECT_FALSE(fs::exists(d.path() + "/snap/" + gone)) << gone;
    EXPECT_TRUE(keptOutAs(*r, gone, KeptOutReason::GitHooks)) << gone;
    EXPECT_EQ(r->manifest.find(std::string(gone) + "/pre-commit"), nullptr) << gone;
  }
  EXPECT_EQ(readAll(d.path() + "/snap/.git/info/exclude"), "*.o\n");
  EXPECT_EQ(readAll(d.path() + "/snap/src/hooks/useAuth.ts"), "export {}\n");
  EXPECT_EQ(readAll(d.path() + "/snap/tools/hooks/pre-commit"), "#!/bin/sh\n");
  EXPECT_NE(keptOutSummary(*r).find("4 git hooks directories"), std::string::npos) << keptOutSummary(*r);
  EXPECT_EQ(readAll(ws + "/.git/hooks/pre-commit"), "#!/bin/sh\necho host hook\n") << "the host's hook was touched";
}

// a13: `notes.txt` hard-linked to .git/config carried the remote's token raw (only .git/config was stripped).
TEST(SnapshotSecrets, HardLinkToAStrippedGitConfigIsKeptOut) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  writeFile(ws + "/.git/config", "[remote \"origin\"]\n\turl = https://u:ghp_main3@github.com/o/r\n");
  ASSERT_EQ(::link((ws + "/.git/config").c_str(), (ws + "/notes.txt").c_str()), 0);
  auto r = takeSnapshot(ws, d.path() + "/snap", IgnoreRules{});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(fs::exists(d.path() + "/snap/notes.txt"));
  EXPECT_TRUE(keptOutAs(*r, "notes.txt", KeptOutReason::HardLink));
  EXPECT_TRUE(filesContaining(d.path() + "/snap", "ghp_main3").empty());
  EXPECT_EQ(readAll(d.path() + "/snap/.git/config"), "[remote \"origin\"]\n\turl = https://github.com/o/r\n");
  auto info = findKeptOut(ws, IgnoreRules{}, false);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_TRUE(keptOutAs(*info, "notes.txt", KeptOutReason::HardLink));
}

// a13, a06: a bare repository's config, included configs, a credential store file, FETCH_HEAD, reflogs and
// .gitmodules reached the guest with their tokens; so did the config forms the line-based stripping missed.
TEST(SnapshotSecrets, BareRepoIncludedConfigStoreFileAndGitLogsAreStripped) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  const std::string config =
      "[remote \"o4\"]\n\turl = https://u:TOKEN4\\\n@github.com/x\n"
      "[include]\n\tpath = ../creds.inc\n"
      "[includeIf \"gitdir:~/\"]\n\tpath = \"" + ws + "/more.inc\"\n"
      "[credential]\n\thelper = store --file=.gitcreds\n"
      "[credential \"https://github.com\"]\n\tusername = me\n"
      "\thelper = \"!f() { echo password=TOKEN7; }; f\"\n"
      "\thelper = cache --timeout=60\n"
      "[github]\n\toauth-token = TOKEN10\n\ttoken-x = TOKEN11\n"
      "[sendemail]\n\tsmtpPassword = TOKEN19\n\tclientSecretFile = TOKEN20\n";
  writeFile(ws + "/.git/config", config);
  writeFile(ws + "/.git/HEAD", "ref: refs/heads/main\n");
  writeFile(ws + "/creds.inc", "[remote \"o9\"]\n\turl = https://u:TOKEN21@h/x\n[include]\n\tpath = deeper.inc\n");
  writeFile(ws + "/deeper.inc", "[github]\n\ttoken = TOKEN22\n");
  writeFile(ws + "/more.inc", "[hub]\n\toauthtoken = TOKEN23\n");
  writeFile(ws + "/.gitcreds", "https://u:TOKEN24@github.com\n");
  writeFile(ws + "/.git/FETCH_HEAD", "abc\t\tbranch 'main' of https://u:TOKEN25@github.com/o/r\n");
  writeFile(ws + "/.git/logs/HEAD", "0 1 a <a> 0 +0\tclone: from https://u:TOKEN26@github.com/o/r\n");
  writeFile(ws + "/.gitmodules", "[submodule \"m\"]\n\turl = https://u:TOKEN27@github.com/o/m\n");
  // A bare repository: by its name, and one found by HEAD and objects/ alone.
  writeFile(ws + "/mirror.git/config", "[remote \"origin\"]\n\turl = https://u:TOKEN28@github.com/o/r\n");
  writeFile(ws + "/store/HEAD", "ref: refs/heads/main\n");
  fs::create_directories(ws + "/store/objects");
  writeFile(ws + "/store/config", "[remote \"origin\"]\n\turl = https://u:TOKEN29@github.com/o/r\n");
  writeFile(ws + "/store/logs/refs/heads/main", "0 1 a <a> 0 +0\tfetch: https://u:TOKEN30@h/x\n");
  // Not git files: left as they are.
  writeFile(ws + "/src/config", "url = https://keep:me@example.com/\n");
  writeFile(ws + "/docs/logs/x.txt", "see https://keep:me@example.com/\n");
  auto r = takeSnapshot(ws, d.path() + "/snap", IgnoreRules{});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(filesContaining(d.path() + "/snap", "TOKEN").empty())
      << ::testing::PrintToString(filesContaining(d.path() + "/snap", "TOKEN"));
  EXPECT_FALSE(fs::exists(d.path() + "/snap/.gitcreds"));
  EXPECT_TRUE(keptOutAs(*r, ".gitcreds", KeptOutReason::GitCredentialStore));
  std::string copy = readAll(d.path() + "/snap/.git/config");
  EXPECT_NE(copy.find("url = https://github.com/x\n"), std::string::npos) << copy;
  // Credential helpers and includes are dropped from a repository's config as a whole.
  EXPECT_EQ(copy.find("[credential"), std::string::npos) << copy;
  EXPECT_EQ(copy.find("helper"), std::string::npos) << copy;
  EXPECT_EQ(copy.find("[include"), std::string::npos) << copy;
  EXPECT_EQ(readAll(d.path() + "/snap/.git/FETCH_HEAD"), "abc\t\tbranch 'main' of https://github.com/o/r\n");
  EXPECT_EQ(readAll(d.path() + "/snap/src/config"), "url = https://keep:me@example.com/\n");
  EXPECT_EQ(readAll(d.path() + "/snap/docs/logs/x.txt"), "see https://keep:me@example.com/\n");
  // The host files are untouched and the baseline describes them.
  EXPECT_EQ(readAll(ws + "/.git/config"), config);
  EXPECT_EQ(r->manifest.find(".git/logs/HEAD")->sha256,
            sha256Hex("0 1 a <a> 0 +0\tclone: from https://u:TOKEN26@github.com/o/r\n"));
  EXPECT_EQ(r->gitCredentialsStripped,
            (std::vector<std::string>{".git/FETCH_HEAD", ".git/config", ".git/logs/HEAD", ".gitmodules", "creds.inc",
                                      "deeper.inc", "mirror.git/config", "more.inc", "store/config",
                                      "store/logs/refs/heads/main"}));
  auto info = findKeptOut(ws, IgnoreRules{}, true);
  ASSERT_TRUE(info) << info.error().message;
  EXPECT_EQ(info->gitCredentialsStripped, r->gitCredentialsStripped);
  EXPECT_TRUE(keptOutAs(*info, ".gitcreds", KeptOutReason::GitCredentialStore));
}

// `airlock run` and `airlock info` say how many paths were kept out and why.
TEST(SnapshotSecrets, KeptOutReportCountsEachReason) {
  auto d = scratch();
  std::string ws = d.path() + "/ws";
  writeFile(ws + "/.env", "A=1");
  writeFile(ws + "/.ENV.local", "A=2");
  writeFile(ws + "/notes.txt", "key:\n" + kPemKey);
  ASSERT_EQ(::link((ws + "/.env").c_str(), (ws + "/copy.txt").c_str()), 0);
  writeFile(ws + "/.airlock.yaml", "cpus: 2\n");
  writeFile(ws + "/build/out.o", "o");
  writeFile(ws + "/.git/config", "[remote \"o\"]\n\turl = https://t0k@h/x\n");
  writeFile(ws + "/src/main.c", "int main;");
  IgnoreRules rules;
  rules.addPattern("build/");
  const std::string full =
      "6 paths kept out of the snapshot: 2 secret names, 1 private key, 1 hard link to a kept-out file, 1 airlock "
      "config file, 1 ignored (.airlockignore, --exclude); credentials and commands removed from 1 git config file in the snapshot";
  auto snap = takeSnapshot(ws, d.path() + "/snap", rules);
  ASSERT_TRUE(snap) << snap.error().message;
  EXPECT_EQ(keptOutSummary(*snap), full);
  // airlock info: the walk alone finds all but the content checks, --excluded finds the same as the snapshot.
  auto byName = findKeptOut(ws, rules, false);
  ASSERT_TRUE(byName) << byName.error().message;
  EXPECT_EQ(keptOutSummary(*byName),
            "5 paths kept out of the snapshot: 2 secret names, 1 hard link to a kept-out file, 1 airlock config file, "
            "1 ignored (.airlockignore, --exclude)");
  auto all = findKeptOut(ws, rules, true);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(keptOutSummary(*all), full);
  EXPECT_TRUE(keptOutAs(*all, "notes.txt", KeptOutReason::PrivateKey));
  EXPECT_TRUE(keptOutAs(*all, ".ENV.local", KeptOutReason::SecretName));
  EXPECT_EQ(readAll(ws + "/.git/config"), "[remote \"o\"]\n\turl = https://t0k@h/x\n");
  EXPECT_EQ(keptOutSummary(SnapshotResult{}), "");
}

}  // namespace
}  // namespace airlock::workspace
