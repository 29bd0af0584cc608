#include "egress/blocked_log.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace airlock::egress {
namespace {

TEST(BlockedLogTest, EmptyUntilSomethingIsBlocked) { EXPECT_TRUE(BlockedLog().entries().empty()); }

// The guest chooses SNI and Host names: the end-of-session summary prints
// them after "airlock:", so terminal escapes in them arrive escaped.
TEST(BlockedLogTest, GuestChosenNameWithTerminalEscapesIsKeptEscaped) {
  BlockedLog log;
  log.add("192.0.2.10:443 SNI x\x1b]0;pwned\x07\x1b[2J\u202e.example", "not on the allowlist");
  ASSERT_EQ(log.entries().size(), 1u);
  EXPECT_EQ(log.entries()[0].what, "192.0.2.10:443 SNI x\\x1b]0;pwned\\x07\\x1b[2J\\u202e.example");
}

TEST(BlockedLogTest, AggregatesByWhatAndReasonMostFrequentFirst) {
  BlockedLog log;
  log.add("evil.example.net A", "not on the allowlist");
  log.add("192.0.2.10:443 SNI other.example.com", "SNI mismatch");
  log.add("evil.example.net A", "not on the allowlist");
  log.add("evil.example.net A", "tunnel type");  // same name, other reason: its own entry
  log.add("192.0.2.10:443 SNI other.example.com", "SNI mismatch");
  log.add("evil.example.net A", "not on the allowlist");
  log.add("a.example.net A", "not on the allowlist");
  std::vector<BlockedEntry> expected = {
      {"evil.example.net A", "not on the allowlist", 3},
      {"192.0.2.10:443 SNI other.example.com", "SNI mismatch", 2},
      // Equal counts: by what, then by reason.
      {"a.example.net A", "not on the allowlist", 1},
      {"evil.example.net A", "tunnel type", 1},
  };
  EXPECT_EQ(log.entries(), expected);
}

TEST(BlockedLogTest, DistinctEntriesAreCappedIntoOneOverflowEntry) {
  BlockedLog log(3);
  for (int i = 0; i < 10; ++i) log.add("n" + std::to_string(i) + ".example.net A", "not on the allowlist");
  log.add("n0.example.net A", "not on the allowlist");  // known: still counted on its own entry
  auto entries = log.entries();
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0], (BlockedEntry{"n0.example.net A", "not on the allowlist", 2}));
  EXPECT_EQ(entries[1].what, "n1.example.net A");
  EXPECT_EQ(entries[2].what, "n2.example.net A");
  EXPECT_EQ(entries[3], (BlockedEntry{BlockedLog::kOverflowWhat, BlockedLog::kOverflowReason, 7}));
}

TEST(BlockedLogTest, ConcurrentAddsAreAllCounted) {
  BlockedLog log;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&log, t] {
      for (int i = 0; i < 1000; ++i) {
        log.add("shared", "reason");
        log.add("thread" + std::to_string(t), "reason");
        (void)log.entries();
      }
    });
  for (auto& t : threads) t.join();
  auto entries = log.entries();
  ASSERT_EQ(entries.size(), 9u);
  EXPECT_EQ(entries[0], (BlockedEntry{"shared", "reason", 8000}));
  for (size_t i = 1; i < entries.size(); ++i) EXPECT_EQ(entries[i].count, 1000u) << entries[i].what;
}

}  // namespace
}  // namespace airlock::egress
