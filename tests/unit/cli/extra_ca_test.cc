// The user's extra_ca_certs reach the guest's plan and the agent's TLS
// variables; without the setting nothing changes.

#include "cli/extra_ca.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "common/exit_codes.h"
#include "support/scratch.h"

namespace airlock::cli {
namespace {

TEST(ExtraCa, TheCertificatesGoIntoThePlanAndTheTlsVariablesNameTheBundle) {
  auto dir = test::scratchDir("airlock-extra-ca-");
  const std::string pem = dir.path() + "/corp.pem";
  ASSERT_EQ(std::system(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + dir.path() +
                         "/k -out " + pem + " -days 2 -subj /CN=corp 2>/dev/null")
                            .c_str()),
            0);
  config::Settings settings;
  session::Plan plan;
  agents::EnvMap env = {{"SSL_CERT_FILE", "/host/path/that/is/not/in/the/guest"}};
  ASSERT_TRUE(applyExtraCaCertificates(settings, plan, env));
  EXPECT_TRUE(plan.extraCaCertificates.empty());
  EXPECT_EQ(env.size(), 1u);

  settings.extraCaCerts = config::Sourced<std::string>{pem, config::Layer::kUser};
  ASSERT_TRUE(applyExtraCaCertificates(settings, plan, env));
  EXPECT_NE(plan.extraCaCertificates.find("BEGIN CERTIFICATE"), std::string::npos);
  for (const char* name : {"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE"})
    EXPECT_EQ(env.at(name), "/home/agent/.airlock/ca-bundle.pem") << name;

  std::ofstream(dir.path() + "/key.pem") << "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
  settings.extraCaCerts->value = dir.path() + "/key.pem";
  session::Plan other;
  auto r = applyExtraCaCertificates(settings, other, env);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUsage);
  EXPECT_TRUE(other.extraCaCertificates.empty());
}

}  // namespace
}  // namespace airlock::cli
