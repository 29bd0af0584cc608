// The host user's git identity, and the guest's ~/.gitconfig made of it.

#include <gtest/gtest.h>

#include "test_util.h"
#include "workspace/git_identity.h"

namespace airlock::workspace {
namespace {

using test::scratch;
using test::writeFile;

// As git reads it: ~/.gitconfig wins over the XDG file, and its includes count.
TEST(GitIdentity, ReadsTheGlobalConfigWithItsIncludes) {
  auto d = scratch();
  const std::string home = d.path() + "/home", xdg = d.path() + "/xdg";
  writeFile(xdg + "/git/config", "[user]\n\tname = From Xdg\n\temail = xdg@example.com\n");
  writeFile(home + "/.gitconfig", "[include]\n\tpath = identity.inc\n[credential]\n\thelper = store\n");
  writeFile(home + "/identity.inc", "[user]\n\tname = Ada Lovelace\n");
  GitIdentity id = hostGitIdentity(home, xdg);
  EXPECT_EQ(id.name, "Ada Lovelace");
  EXPECT_EQ(id.email, "xdg@example.com");
  GitIdentity none = hostGitIdentity(d.path() + "/nobody", d.path() + "/nowhere");
  EXPECT_EQ(none.name, "");
  EXPECT_EQ(none.email, "");
}

// Only the identity and safe.directory; a value cannot start a key of its own.
TEST(GitIdentity, TheGuestConfigHoldsTheIdentityAndTheWorkspaceOnly) {
  EXPECT_EQ(guestGitConfig({"Ada", "ada@example.com"}),
            "[user]\n\tname = \"Ada\"\n\temail = \"ada@example.com\"\n[safe]\n\tdirectory = /workspace\n");
  EXPECT_EQ(guestGitConfig({}), "[safe]\n\tdirectory = /workspace\n");
  EXPECT_EQ(guestGitConfig({"A \"q\" \\ b\n[core]\n\tfsmonitor = x", ""}),
            "[user]\n\tname = \"A \\\"q\\\" \\\\ b[core]fsmonitor = x\"\n[safe]\n\tdirectory = /workspace\n");
}

}  // namespace
}  // namespace airlock::workspace
