// Session names, the attach socket's frames and the states `airlock ls`
// shows, on real session directories (no VM).

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "common/fd.h"
#include "common/paths.h"
#include "session/attach_frames.h"
#include "session/layout.h"
#include "session/session.h"
#include "session/session_list.h"
#include "test_util.h"

namespace airlock::session {
namespace {

namespace fs = std::filesystem;

class SessionList : public ::testing::Test {
 protected:
  TempDir state_ = workspace::test::scratch(), workspace_ = workspace::test::scratch();
};

TEST(SessionName, FollowsDockersRule) {
  for (const std::string& good : std::vector<std::string>{"a", "fix-tests", "job_1.v2", "A9", std::string(64, 'x')})
    EXPECT_TRUE(validSessionName(good)) << good;
  for (const std::string& bad : std::vector<std::string>{"", "-x", ".x", "_x", "a/b", "a b", "..", "é", "a\n", std::string(65, 'x')})
    EXPECT_FALSE(validSessionName(bad)) << bad;
}

// A name is one session's: a second session cannot take it while the first
// exists, the name resolves like an id, and it is free again once the
// session is removed (or its directory vanished).
TEST_F(SessionList, ANameBelongsToOneSessionUntilItIsRemoved) {
  auto a = Session::open(state_.path(), workspace_.path(), "fix-tests", "claude-code");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ((*a)->name(), "fix-tests");
  EXPECT_EQ(resumeCommand(state_.path(), (*a)->dir()), "airlock review fix-tests");
  auto resolved = resolveSessionDir(state_.path(), "fix-tests");
  ASSERT_TRUE(resolved) << resolved.error().message;
  EXPECT_EQ(*resolved, (*a)->dir());
  auto taken = Session::open(state_.path(), workspace_.path(), "fix-tests", "claude-code");
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code, 64);
  EXPECT_NE(taken.error().message.find("is taken by session " + (*a)->id()), std::string::npos)
      << taken.error().message;
  size_t dirs = 0;
  for (auto& e : fs::directory_iterator(state_.path() + "/sessions")) dirs += e.is_directory();
  EXPECT_EQ(dirs, 1u) << "the refused session left its directory";
  const std::string dir = (*a)->dir();
  a->reset();
  releaseSessionName(state_.path(), dir);
  ASSERT_TRUE(removeTree(dir));
  EXPECT_FALSE(resolveSessionDir(state_.path(), "fix-tests"));
  auto again = Session::open(state_.path(), workspace_.path(), "fix-tests", "claude-code");
  ASSERT_TRUE(again) << again.error().message;
  // A directory removed without releasing its name (system prune) frees it too.
  const std::string gone = (*again)->dir();
  again->reset();
  ASSERT_TRUE(removeTree(gone));
  EXPECT_TRUE(Session::open(state_.path(), workspace_.path(), "fix-tests", "claude-code"));
}

TEST_F(SessionList, DefaultNameIsTheLabelAndSixHexDigitsOfTheId) {
  auto s = Session::open(state_.path(), workspace_.path(), "", "codex");
  ASSERT_TRUE(s) << s.error().message;
  const std::string& id = (*s)->id();
  EXPECT_EQ((*s)->name(), "codex-" + id.substr(id.rfind('-') + 1, 6));
  EXPECT_TRUE(validSessionName((*s)->name()));
  auto bad = Session::open(state_.path(), workspace_.path(), "../x", "codex");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, 64);
}

// A name link planted to point at a directory outside the sessions, or at
// a session that carries another name, names nothing.
TEST_F(SessionList, APlantedNameLinkNamesNothing) {
  auto s = Session::open(state_.path(), workspace_.path(), "real", "x");
  ASSERT_TRUE(s) << s.error().message;
  fs::create_directories(state_.path() + "/names");
  ASSERT_EQ(::symlink(workspace_.path().c_str(), (state_.path() + "/names/outside").c_str()), 0);
  ASSERT_EQ(::symlink((*s)->dir().c_str(), (state_.path() + "/names/alias").c_str()), 0);
  EXPECT_EQ(sessionByName(state_.path(), "outside"), "");
  EXPECT_EQ(sessionByName(state_.path(), "alias"), "");
  EXPECT_FALSE(resolveSessionDir(state_.path(), "outside"));
}

// The states `airlock ls` shows, from what the session directory holds and
// whether its owner holds the run lock.
TEST_F(SessionList, StatesFollowTheDirectoryAndTheRunLock) {
  auto s = Session::open(state_.path(), workspace_.path(), "job", "run-image");
  ASSERT_TRUE(s) << s.error().message;
  const std::string dir = (*s)->dir();
  SessionMeta meta;
  meta.label = "run-image";
  meta.created = 1796000000;
  meta.owner = ::getpid();
  meta.ownerStart = processStartTime(meta.owner);
  meta.cpus = 2;
  meta.memoryMiB = 1024;
  meta.detached = true;
  ASSERT_TRUE(writeSessionMeta(dir, meta));
  auto only = [&] {
    auto all = listSessions(state_.path());
    EXPECT_EQ(all.size(), 1u);
    return all.empty() ? SessionEntry{} : all.front();
  };
  auto running = only();
  EXPECT_EQ(stateText(running), "running");
  EXPECT_EQ(running.name, "job");
  ASSERT_TRUE(running.meta);
  EXPECT_EQ(running.meta->cpus, 2u);
  EXPECT_TRUE(running.meta->detached);
  EXPECT_GT(running.hostMemoryBytes, 0u) << "this process's own memory";
  // A pid that is no longer the owner (its start time differs): not its memory.
  SessionMeta reused = meta;
  reused.ownerStart = meta.ownerStart + 1;
  ASSERT_TRUE(writeSessionMeta(dir, reused));
  EXPECT_EQ(only().hostMemoryBytes, 0u) << "a reused pid's memory was shown as the session's";
  ASSERT_TRUE(writeSessionMeta(dir, meta));
  s->reset();  // the owner died before the command exited
  EXPECT_EQ(stateText(only()), "dead");
  ASSERT_TRUE(writeFileAtomic(SessionLayout{dir}.exitCode(), "3\n", 0600));
  ASSERT_TRUE(writeFileAtomic(SessionLayout{dir}.changeSet(), std::string(1024, '\0'), 0600));
  EXPECT_EQ(stateText(only()), "pending review");
  ASSERT_TRUE(writeFileAtomic(SessionLayout{dir}.reviewed(), "review (auto): 1 flushed\n", 0600));
  auto ended = only();
  EXPECT_EQ(stateText(ended), "exited (3)");
  EXPECT_EQ(ended.exitCode, 3);
  {
    auto review = lockForReview(dir);
    ASSERT_TRUE(review);
    EXPECT_EQ(stateText(only()), "reviewing");
  }
  // Hand-made reviews' sessions (review-XXXXXX) are not listed.
  fs::create_directories(state_.path() + "/sessions/review-abc123");
  ASSERT_TRUE(recordWorkspace(state_.path() + "/sessions/review-abc123", workspace_.path()));
  EXPECT_EQ(listSessions(state_.path()).size(), 1u);
}

// Kept changes that are only the agent's git metadata (never flushed: its
// commits came back through git) leave nothing to review: the session is
// not "pending review", and `airlock rm` needs no --force.
TEST_F(SessionList, KeptGitMetadataAloneIsNotPendingReview) {
  auto s = Session::open(state_.path(), workspace_.path(), "job", "claude-code");
  ASSERT_TRUE(s) << s.error().message;
  const std::string dir = (*s)->dir();
  s->reset();
  SessionLayout layout{dir};
  ASSERT_TRUE(writeFileAtomic(layout.exitCode(), "0\n", 0600));
  ASSERT_TRUE(writeFileAtomic(layout.changeSet(), std::string(1024, '\0'), 0600));
  ASSERT_TRUE(writeFileAtomic(layout.reviewed(), "review (auto): 1 flushed\n", 0600));
  ASSERT_TRUE(makeDirs(dir + "/pending", 0700));
  ASSERT_TRUE(writeFileAtomic(layout.pendingChangeSet(), std::string(1024, '\0'), 0600));
  EXPECT_TRUE(sessionHasPending(dir)) << "kept changes without their decisions count as pending";
  ASSERT_TRUE(writeFileAtomic(layout.pendingDecisions(), "git metadata .git/index\ngit metadata .git/refs/heads/fix\n", 0600));
  EXPECT_FALSE(sessionHasPending(dir));
  EXPECT_EQ(stateText(listSessions(state_.path()).front()), "exited (0)");
  ASSERT_TRUE(writeFileAtomic(layout.pendingDecisions(), "git metadata .git/index\nheld back Makefile\n", 0600));
  EXPECT_TRUE(sessionHasPending(dir));
  EXPECT_EQ(stateText(listSessions(state_.path()).front()), "pending review");
}

// A detached session's supervisor killed (a second Ctrl-C to `run -d`)
// while it still prepared the session: its janitor keeps the scratch disk,
// but no command ever wrote to it. The session is dead, not pending review
// (rm refused it without -f, and diff booted a VM to find nothing).
TEST_F(SessionList, AKeptDiskOfACommandThatNeverRanIsNotPendingReview) {
  auto s = Session::open(state_.path(), workspace_.path(), "job", "shell");
  ASSERT_TRUE(s) << s.error().message;
  const std::string dir = (*s)->dir();
  s->reset();
  SessionLayout layout{dir};
  ASSERT_TRUE(writeFileAtomic(layout.keptScratch(), std::string(4096, '\0'), 0600));
  EXPECT_FALSE(sessionHasPending(dir));
  EXPECT_EQ(stateText(listSessions(state_.path()).front()), "dead");
  ASSERT_TRUE(writeFileAtomic(layout.output(), "started\n", 0600));
  EXPECT_TRUE(sessionHasPending(dir)) << "the disk of a command that ran holds its changes";
  EXPECT_EQ(stateText(listSessions(state_.path()).front()), "pending review");
}

TEST(AttachFrames, RoundTripSplitAnywhere) {
  std::string wire = encodeAttachFrame(AttachFrameType::kInput, "keys") + encodeResize(30, 100) +
                     encodeAttachFrame(AttachFrameType::kOutput, std::string(70000 % kMaxFramePayload, 'o')) +
                     encodeAttachFrame(AttachFrameType::kExit, "7") + encodeAttachFrame(AttachFrameType::kDiff, "");
  for (size_t split = 0; split <= wire.size(); split += 997) {
    AttachFrameReader reader;
    std::vector<AttachFrame> got;
    for (std::string_view part : {std::string_view(wire).substr(0, split), std::string_view(wire).substr(split)}) {
      reader.feed(part);
      while (true) {
        auto f = reader.next();
        ASSERT_TRUE(f) << f.error().message;
        if (!*f) break;
        got.push_back(std::move(**f));
      }
    }
    ASSERT_EQ(got.size(), 5u) << split;
    EXPECT_EQ(got[0].payload, "keys");
    EXPECT_EQ(decodeResize(got[1].payload), (std::pair<uint16_t, uint16_t>{30, 100}));
    EXPECT_EQ(got[2].payload.size(), 70000 % kMaxFramePayload);
    EXPECT_EQ(got[3].type, AttachFrameType::kExit);
    EXPECT_EQ(got[4].type, AttachFrameType::kDiff);
    EXPECT_EQ(got[4].payload, "");
  }
}

TEST(AttachFrames, UnknownTypesAndOversizedFramesAreRefused) {
  AttachFrameReader unknown;
  unknown.feed("z\0\0\0\0");
  EXPECT_FALSE(unknown.next());
  AttachFrameReader huge;
  huge.feed(std::string("o\x7f\xff\xff\xff", 5));
  EXPECT_FALSE(huge.next()) << "a 2 GiB frame must not be waited for";
  EXPECT_FALSE(decodeResize(std::string("\0\0\0\x50", 4))) << "zero rows";
  EXPECT_FALSE(decodeResize("abc"));
}

}  // namespace
}  // namespace airlock::session
