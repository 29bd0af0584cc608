#include "image/pypi_packages.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/subprocess.h"

namespace airlock::image {
namespace {

namespace fs = std::filesystem;

// What pip 23 prints when it cannot reach its index (this machine, PyPI
// unreachable), and when the version does not exist.
constexpr std::string_view kUnreachable =
    "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection "
    "broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7fc6>: Failed to "
    "establish a new connection: [Errno -2] Name or service not known')': /simple/hermes-agent/\n"
    "ERROR: Could not find a version that satisfies the requirement hermes-agent==0.19.0 (from versions: none)\n"
    "ERROR: No matching distribution found for hermes-agent==0.19.0\n";

TEST(PipFailure, SaysPyPIUnreachableWithTheReason) {
  EXPECT_EQ(pipFailure(kUnreachable),
            "PyPI unreachable: Failed to establish a new connection: [Errno -2] Name or service not known");
  EXPECT_EQ(pipFailure("x ProxyError('Cannot connect to proxy.', ...)\n"), "PyPI unreachable: ProxyError(");
}

TEST(PipFailure, OtherwiseItsErrorLines) {
  EXPECT_EQ(pipFailure("ERROR: Could not find a version that satisfies the requirement x==9 (from versions: 1.0)\n"
                       "ERROR: No matching distribution found for x==9\n"),
            "ERROR: Could not find a version that satisfies the requirement x==9 (from versions: 1.0) | ERROR: No "
            "matching distribution found for x==9");
  EXPECT_EQ(pipFailure("Traceback ...\n"), "pip failed without an ERROR line");
}

TEST(ConsoleScript, TheEntryOfConsoleScripts) {
  auto e = consoleScript(
      "[gui_scripts]\nhermes = wrong:main\n\n[console_scripts]\nhermes-acp = acp:run\n"
      "hermes = hermes_cli.main:main\n",
      "hermes", "hermes-agent==0.19.0");
  ASSERT_TRUE(e.has_value()) << e.error().message;
  EXPECT_EQ(e->first, "hermes_cli.main");
  EXPECT_EQ(e->second, "main");
  auto dotted = consoleScript("[console_scripts]\n  tool=pkg.cli : App.run  \n", "tool", "t");
  ASSERT_TRUE(dotted.has_value());
  EXPECT_EQ(dotted->second, "App.run");
}

// entry_points.txt comes from the wheel: what becomes Python source in the
// wrapper must be identifiers, nothing else.
TEST(ConsoleScript, RefusesWhatIsNotModuleAndFunction) {
  for (const char* text : {"[console_scripts]\nhermes = os;import os\n", "[console_scripts]\nhermes = m:f()\n",
                           "[console_scripts]\nhermes = m\n", "[console_scripts]\nhermes = m:\n",
                           "[console_scripts]\nhermes = 1m:f\n", "[console_scripts]\nhermes = m:f [extra]\n",
                           "[console_scripts]\nhermes = m..n:f\n", "[console_scripts]\nhermes = m:f\\nimport os\n"}) {
    auto e = consoleScript(text, "hermes", "hermes-agent==0.19.0");
    ASSERT_FALSE(e.has_value()) << text;
    EXPECT_EQ(e.error().code, exit_code::kImage);
    EXPECT_NE(e.error().message.find("is not MODULE:FUNCTION"), std::string::npos) << e.error().message;
  }
  auto missing = consoleScript("[console_scripts]\nother = m:f\n", "hermes", "hermes-agent==0.19.0");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("hermes-agent==0.19.0 has no console script hermes"), std::string::npos);
}

/// A wheel made by the test (a zip with its dist-info), in a directory of
/// its own: what `--from DIR` gets on a host without PyPI.
class PypiWheels : public testing::Test {
 protected:
  void SetUp() override {
    auto pip = runCommand({"python3", "-m", "pip", "--version"});
    if (!pip || pip->exitCode != 0) GTEST_SKIP() << "python3 -m pip is missing (scripts/setup installs python3-pip)";
    dir_ = fs::temp_directory_path() / ("airlock-pypi-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "wheels");
    fs::create_directories(dir_ / "cache");
    fs::create_directories(dir_ / "root/usr/local/bin");
    const std::string script = R"(import sys, zipfile
w = zipfile.ZipFile(sys.argv[1], "w")
w.writestr("demo_agent/__init__.py", "def main():\n    import sys\n    print('demo agent', sys.argv[0], sys.prefix)\n    return 3\n")
d = "demo_agent-1.0.0.dist-info/"
w.writestr(d + "METADATA", "Metadata-Version: 2.1\nName: demo-agent\nVersion: 1.0.0\n")
w.writestr(d + "WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
w.writestr(d + "entry_points.txt", "[console_scripts]\ndemo = demo_agent:main\n")
w.writestr(d + "RECORD", "")
w.close()
)";
    auto made = runCommand({"python3", "-c", script, (dir_ / "wheels/demo_agent-1.0.0-py3-none-any.whl").string()});
    ASSERT_TRUE(made && made->exitCode == 0) << (made ? made->stderrText : made.error().message);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

// The whole PyPI path offline: the wheels from --from DIR, cached, then a
// venv in the image tree whose console script runs with python3 (the host's
// stands in for the guest's: both are CPython 3.11 on Debian 12).
TEST_F(PypiWheels, FromADirectoryIntoAVenvWhoseScriptRuns) {
  auto wheels =
      fetchWheels((dir_ / "cache").string(), "demo-agent", "1.0.0", (dir_ / "wheels").string(), "demo", nullptr);
  ASSERT_TRUE(wheels.has_value()) << wheels.error().message;
  EXPECT_EQ(*wheels, (dir_ / "cache/pypi/demo_agent-1.0.0").string());
  EXPECT_TRUE(fs::exists(*wheels + "/demo_agent-1.0.0-py3-none-any.whl"));
  const std::string root = (dir_ / "root").string();
  auto done = installWheels(root, "/opt/demo", *wheels, "demo-agent", "1.0.0", "demo", "demo", nullptr);
  ASSERT_TRUE(done.has_value()) << done.error().message;
  EXPECT_EQ(readFile(root + "/opt/demo/pyvenv.cfg").value_or(""),
            "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11\n");
  EXPECT_EQ(fs::read_symlink(root + "/opt/demo/bin/python3"), "/usr/bin/python3");
  EXPECT_TRUE(fs::exists(root + "/opt/demo/lib/python3.11/site-packages/demo_agent/__init__.py"));
  const std::string wrapper = readFile(root + "/usr/local/bin/demo").value_or("");
  EXPECT_TRUE(wrapper.starts_with("#!/opt/demo/bin/python3\n")) << wrapper;
  EXPECT_NE(wrapper.find("from demo_agent import main\n"), std::string::npos) << wrapper;
  // The venv's python3 (a link to /usr/bin/python3) finds its site-packages.
  auto ran = runCommand({root + "/opt/demo/bin/python3", root + "/usr/local/bin/demo"});
  ASSERT_TRUE(ran.has_value());
  EXPECT_EQ(ran->exitCode, 3) << ran->stderrText;
  EXPECT_EQ(ran->stdoutText, "demo agent demo " + root + "/opt/demo\n");
}

// Without the package in DIR (or with only an sdist, whose build would run
// its code here), pip finds nothing: the error says what DIR must hold,
// and nothing is cached.
TEST_F(PypiWheels, ADirectoryWithoutTheWheelsSaysWhatItMustHold) {
  auto wheels =
      fetchWheels((dir_ / "cache").string(), "hermes-agent", "0.19.0", (dir_ / "wheels").string(), "hermes", nullptr);
  ASSERT_FALSE(wheels.has_value());
  EXPECT_EQ(wheels.error().code, exit_code::kImage);
  EXPECT_NE(wheels.error().message.find("DIR must hold wheels of hermes-agent==0.19.0"), std::string::npos)
      << wheels.error().message;
  EXPECT_FALSE(fs::exists(dir_ / "cache/pypi/hermes_agent-0.19.0"));
}

}  // namespace
}  // namespace airlock::image
