// Pulls from docker-registry over TLS (a CA and server certificate made by
// the test with openssl) with auth: htpasswd (HTTP Basic) and the token flow
// (`auth: token` with a token server that checks the htpasswd file). Images
// are pushed with skopeo using the right credentials.

#include <stdlib.h>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/paths.h"
#include "common/subprocess.h"
#include "image/oci/image_pull.h"
#include "image/oci/image_store.h"
#include "local_registry.h"

namespace airlock::image::oci {
namespace {

using test::kGzipLayer;

using test::LocalRegistry;
using test::OciLayout;
using test::RegistrySecurity;

class SecureRegistry : public ::testing::TestWithParam<RegistrySecurity::Auth> {
 protected:
  void SetUp() override {
    RegistrySecurity sec;
    sec.tls = true;
    sec.auth = GetParam();
    if (auto why = test::securedRegistrySkipReason(sec); !why.empty()) GTEST_SKIP() << why;
    registry_ = std::make_unique<LocalRegistry>(sec);
    auto t = TempDir::create("/tmp", "airlock-secure-registry-test-");
    ASSERT_TRUE(t);
    tmp_.emplace(std::move(*t));
    layout_ = std::make_unique<OciLayout>(tmp_->path() + "/layout");
    store_ = std::make_unique<ImageStore>(tmp_->path() + "/store");
    auto m = layout_->addImage({layout_->addBlob(test::busyboxLayer(), kGzipLayer)});
    layout_->tag(m, "v1");
    layout_->push(*registry_, "team/private", "v1");
    manifest_ = m.digest;
  }
  std::string image() const { return registry_->host() + "/team/private:v1"; }
  Result<PulledImage> pull(const std::string& password, bool withCa) {
    PullOptions o;
    if (withCa) o.registry.caCert = registry_->caCert();
    o.registry.dockerConfigDir = registry_->dockerConfig(registry_->security().user, password);
    o.registry.attempts = 1;
    return pullImage(*store_, *parseImageRef(image()), o);
  }
  // `airlock image pull` with DOCKER_CONFIG and a private cache directory.
  CommandOutput cli(const std::string& password, bool withCa) {
    ::setenv("DOCKER_CONFIG", registry_->dockerConfig(registry_->security().user, password).c_str(), 1);
    ::setenv("AIRLOCK_CACHE_DIR", (tmp_->path() + "/cache").c_str(), 1);
    std::vector<std::string> argv = {AIRLOCK_BINARY, "image", "pull", "-q", "--verify=off"};
    if (withCa) argv.insert(argv.end(), {"--ca-cert", registry_->caCert()});
    argv.push_back(image());
    auto r = runCommand(argv);
    ::unsetenv("DOCKER_CONFIG");
    ::unsetenv("AIRLOCK_CACHE_DIR");
    return r ? *r : CommandOutput{-1, "", r.error().message};
  }
  static int lines(const std::string& text) {
    int n = 0;
    for (char c : text) n += c == '\n';
    return n;
  }
  std::unique_ptr<LocalRegistry> registry_;
  std::optional<TempDir> tmp_;
  std::unique_ptr<OciLayout> layout_;
  std::unique_ptr<ImageStore> store_;
  std::string manifest_;
};

TEST_P(SecureRegistry, PullsWithTheRightCredentialsAndTheCa) {
  auto img = pull(registry_->security().password, true);
  ASSERT_TRUE(img) << img.error().message;
  EXPECT_EQ(img->record.manifestDigest, manifest_);
  EXPECT_TRUE(pathExists(img->erofsPath));
  auto out = cli(registry_->security().password, true);
  EXPECT_EQ(out.exitCode, 0) << out.stderrText;
}

TEST_P(SecureRegistry, WrongPasswordIsOneClearLineAndExitCode67) {
  auto img = pull("wrong password", true);
  ASSERT_FALSE(img);
  EXPECT_EQ(img.error().code, exit_code::kImage);
  const std::string& m = img.error().message;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find(registry_->host()), std::string::npos) << m;
  EXPECT_NE(m.find("docker login"), std::string::npos) << m;
  if (GetParam() == RegistrySecurity::Auth::Token) EXPECT_NE(m.find("refused the credentials"), std::string::npos) << m;
  else EXPECT_NE(m.find("denied access"), std::string::npos) << m;
  EXPECT_TRUE(store_->list() && store_->list()->empty());
  auto out = cli("wrong password", true);
  EXPECT_EQ(out.exitCode, exit_code::kImage) << out.stderrText;
  EXPECT_EQ(lines(out.stderrText), 1) << out.stderrText;
  EXPECT_NE(out.stderrText.find("docker login"), std::string::npos) << out.stderrText;
}

TEST_P(SecureRegistry, TlsWithoutTheCaNamesTheFix) {
  auto img = pull(registry_->security().password, false);
  ASSERT_FALSE(img);
  EXPECT_EQ(img.error().code, exit_code::kImage);
  const std::string& m = img.error().message;
  EXPECT_NE(m.find("--ca-cert"), std::string::npos) << m;
  EXPECT_NE(m.find("not trusted"), std::string::npos) << m;
  EXPECT_EQ(m.find("http://"), std::string::npos) << "fell back to plain HTTP: " << m;
  auto out = cli(registry_->security().password, false);
  EXPECT_EQ(out.exitCode, exit_code::kImage) << out.stderrText;
  EXPECT_NE(out.stderrText.find("--ca-cert"), std::string::npos) << out.stderrText;
}

INSTANTIATE_TEST_SUITE_P(Auth, SecureRegistry,
                         ::testing::Values(RegistrySecurity::Auth::Htpasswd, RegistrySecurity::Auth::Token),
                         [](const auto& p) {
                           return p.param == RegistrySecurity::Auth::Token ? std::string("TokenFlow")
                                                                              : std::string("Htpasswd");
                         });

}  // namespace
}  // namespace airlock::image::oci
