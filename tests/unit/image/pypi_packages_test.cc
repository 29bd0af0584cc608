// PyPI agents (Hermes): the build VM's script, the --from directory, and
// laying the build VM's export (hostile: the guest ran package code) into
// the image. The VM itself is exercised by the e2e test
// AgentE2E.PypiAgentFromLocalWheelsLandsAfterReview.

#include "image/pypi_packages.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "support/tar_builder.h"

namespace airlock::image {
namespace {

using test::makeTar;
using test::TarEntry;

TEST(PipInstallScript, MakesTheVenvInstallsThePinAndCopiesItToTheWorkspace) {
  const std::string online = pipInstallScript("hermes-agent", "0.19.0", "/opt/hermes", false, false);
  EXPECT_EQ(online,
            "set -e\n"
            "python3 -m venv '/opt/hermes'\n"
            "'/opt/hermes'/bin/pip install --no-input --disable-pip-version-check --no-cache-dir --progress-bar off "
            "--retries 2 --timeout 30 'hermes-agent==0.19.0' >&2\n"
            "mkdir -p '/workspace/opt'\n"
            "cp -a '/opt/hermes' '/workspace/opt'/\n");
  // --from: the staged files alone, never an index.
  const std::string offline = pipInstallScript("hermes-agent", "0.19.0", "/opt/hermes", true, true);
  EXPECT_NE(offline.find(" --no-index --find-links /workspace/wheels --quiet 'hermes-agent==0.19.0'"),
            std::string::npos)
      << offline;
  EXPECT_EQ(offline.find("--retries"), std::string::npos);
  // A quote cannot end the quoting (the parser allows none; the script holds anyway).
  EXPECT_NE(pipInstallScript("a'b", "1", "/opt/x", true, false).find("'a'\\''b==1'"), std::string::npos);
}

class PypiFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = TempDir::create("/tmp", "airlock-pypi-test-");
    ASSERT_TRUE(t);
    tmp_.emplace(std::move(*t));
    root_ = tmp_->path() + "/root";
    scratch_ = tmp_->path() + "/scratch";
    ASSERT_EQ(::mkdir(root_.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(scratch_.c_str(), 0755), 0);
  }
  void write(const std::string& path, const std::string& content) {
    std::ofstream(path, std::ios::binary) << content;
  }
  /// layVenv of a change set holding `entries`, for the agent "probe".
  Result<> lay(const std::vector<TarEntry>& entries) {
    const std::string tar = tmp_->path() + "/changes.tar";
    write(tar, makeTar(entries));
    return layVenv(tar, scratch_, root_, "/opt/probe", "probe", "probe", "probe");
  }
  static std::vector<TarEntry> venv() {
    return {{"opt/", 'd', "", "", 0755},
            {"opt/probe/", 'd', "", "", 0755},
            {"opt/probe/pyvenv.cfg", 'f', "home = /usr/bin\n"},
            {"opt/probe/bin/", 'd', "", "", 0755},
            {"opt/probe/bin/python3", 'l', "", "/usr/bin/python3"},
            {"opt/probe/bin/probe", 'f', "#!/opt/probe/bin/python3\nprint('hi')\n", "", 0755},
            {"opt/probe/lib/", 'd', "", "", 0755},
            {"opt/probe/lib/helper", 'f', "x", "", 04755}};
  }
  std::optional<TempDir> tmp_;
  std::string root_, scratch_;
};

TEST_F(PypiFiles, StagesWheelsAndSdistsOnly) {
  const std::string from = tmp_->path() + "/from";
  ASSERT_EQ(::mkdir(from.c_str(), 0755), 0);
  write(from + "/probe-1.0-py3-none-any.whl", "wheel");
  write(from + "/dep-2.0.tar.gz", "sdist");
  write(from + "/other-1.zip", "zip");
  write(from + "/notes.txt", "not a distribution");
  write(tmp_->path() + "/outside.whl", "outside");
  ASSERT_EQ(::symlink((tmp_->path() + "/outside.whl").c_str(), (from + "/link.whl").c_str()), 0);
  const std::string dest = tmp_->path() + "/ws";
  auto staged = stageDistributions(from, dest, "probe", "1.0");
  ASSERT_TRUE(staged) << staged.error().message;
  EXPECT_EQ(*staged, 3u);
  auto names = listDir(dest + "/wheels");
  ASSERT_TRUE(names);
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"dep-2.0.tar.gz", "other-1.zip", "probe-1.0-py3-none-any.whl"}));
  EXPECT_EQ(*readFile(dest + "/wheels/probe-1.0-py3-none-any.whl"), "wheel");

  const std::string empty = tmp_->path() + "/empty";
  ASSERT_EQ(::mkdir(empty.c_str(), 0755), 0);
  auto none = stageDistributions(empty, tmp_->path() + "/ws2", "hermes-agent", "0.19.0");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, exit_code::kUsage);
  EXPECT_NE(none.error().message.find("holds no wheel (.whl) or sdist"), std::string::npos);
  EXPECT_NE(none.error().message.find("--platform manylinux2014_x86_64 hermes-agent==0.19.0`"), std::string::npos)
      << none.error().message;
}

TEST_F(PypiFiles, LaysTheVenvAndItsWrapperIntoTheImage) {
  auto laid = lay(venv());
  ASSERT_TRUE(laid) << laid.error().message;
  EXPECT_EQ(*readFile(root_ + "/opt/probe/bin/probe"), "#!/opt/probe/bin/python3\nprint('hi')\n");
  char target[64] = {};
  ASSERT_GT(::readlink((root_ + "/opt/probe/bin/python3").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "/usr/bin/python3");
  EXPECT_EQ(*readFile(root_ + "/usr/local/bin/probe"), "#!/bin/sh\nexec '/opt/probe'/bin/'probe' \"$@\"\n");
  struct stat st {};
  ASSERT_EQ(::stat((root_ + "/usr/local/bin/probe").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  // A setuid file the guest made is not setuid in the image.
  ASSERT_EQ(::stat((root_ + "/opt/probe/lib/helper").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// The guest ran package code: whatever it exports besides the venv is
// refused, and so is a venv that is not a real directory or lacks the program.
TEST_F(PypiFiles, RefusesAnExportThatHoldsMoreThanTheVenv) {
  struct Case {
    std::string what;
    std::vector<TarEntry> extra;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"a file beside the venv", {{"etc/", 'd'}, {"etc/passwd", 'f', "root::0:0::/:/bin/sh\n"}}, "holds /etc"},
      {"another venv", {{"opt/other/", 'd'}, {"opt/other/x", 'f', "x"}}, "holds /opt/other"},
      {"a file at the top", {{"run.sh", 'f', "x"}}, "holds /run.sh"},
  };
  for (const auto& c : cases) {
    SetUp();
    auto entries = venv();
    entries.insert(entries.end(), c.extra.begin(), c.extra.end());
    auto laid = lay(entries);
    ASSERT_FALSE(laid) << c.what;
    EXPECT_EQ(laid.error().code, exit_code::kImage) << c.what;
    EXPECT_NE(laid.error().message.find(c.expected), std::string::npos) << c.what << ": " << laid.error().message;
    EXPECT_FALSE(pathExists(root_ + "/opt/probe")) << c.what;
    EXPECT_FALSE(pathExists(root_ + "/etc/passwd")) << c.what;
  }
}

TEST_F(PypiFiles, RefusesAVenvThatIsALinkOrLacksItsProgram) {
  auto link = lay({{"opt/", 'd'}, {"opt/probe", 'l', "", "/etc"}});
  ASSERT_FALSE(link);
  EXPECT_NE(link.error().message.find("has no directory /opt/probe"), std::string::npos) << link.error().message;
  EXPECT_FALSE(pathExists(root_ + "/opt/probe"));

  SetUp();
  auto escape = lay({{"opt/", 'd'}, {"opt/probe/", 'd'}, {"opt/probe/../../escape", 'f', "x"}});
  ASSERT_FALSE(escape);
  EXPECT_FALSE(pathExists(tmp_->path() + "/escape"));

  SetUp();
  auto entries = venv();
  entries.erase(entries.begin() + 5);  // bin/probe
  entries.push_back({"opt/probe/bin/probe", 'l', "", "/bin/sh"});
  auto program = lay(entries);
  ASSERT_FALSE(program);
  EXPECT_NE(program.error().message.find("has no program bin/probe (check `binary`"), std::string::npos)
      << program.error().message;

  SetUp();
  auto nothing = lay({});
  ASSERT_FALSE(nothing);
  EXPECT_NE(nothing.error().message.find("the install did not finish"), std::string::npos)
      << nothing.error().message;
}

// The check before anything is built: an unreachable PyPI says so and
// names the way out (this machine cannot reach PyPI: when it can, the
// check passes and there is nothing to see).
TEST(PypiReachable, SaysUnreachableWithTheWayOut) {
  auto r = checkPypiReachable("hermes", "hermes-agent", "0.19.0", 3000);
  if (r) GTEST_SKIP() << "pypi.org:443 is reachable from this machine";
  EXPECT_EQ(r.error().code, exit_code::kImage);
  EXPECT_TRUE(r.error().message.starts_with("PyPI unreachable: ")) << r.error().message;
  EXPECT_NE(r.error().message.find("hermes-agent==0.19.0`, then `airlock image build hermes --from DIR` here"),
            std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace airlock::image
