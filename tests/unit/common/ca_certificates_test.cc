#include "common/ca_certificates.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/exit_codes.h"
#include "support/scratch.h"

namespace airlock {
namespace {

/// A fresh self-signed CA made by the openssl command, as a user would have one.
std::string makeCa(const std::string& dir, const std::string& name) {
  const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + dir + "/" +
                          name + ".key -out " + dir + "/" + name + ".pem -days 2 -subj /CN=" + name + " 2>/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(dir + "/" + name + ".pem");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(CaCertificates, CertificatesAreKeptAndNothingElseOfTheFile) {
  auto dir = test::scratchDir("airlock-ca-");
  const std::string a = makeCa(dir.path(), "corp-a"), b = makeCa(dir.path(), "corp-b");
  write(dir.path() + "/bundle.pem", "# our proxies\n" + a + "comment between\n" + b);
  auto pem = readCaCertificates(dir.path() + "/bundle.pem");
  ASSERT_TRUE(pem) << pem.error().message;
  EXPECT_EQ(*pem, a + b);  // re-encoded by OpenSSL: the same PEM, the text around it gone
  EXPECT_EQ(pem->find("our proxies"), std::string::npos);
}

TEST(CaCertificates, AnythingButCertificatesIsRefusedWithAUsageError) {
  auto dir = test::scratchDir("airlock-ca-");
  const std::string a = makeCa(dir.path(), "corp");
  std::ifstream keyIn(dir.path() + "/corp.key");
  const std::string key(std::istreambuf_iterator<char>(keyIn), {});
  const std::pair<std::string, std::string> cases[] = {
      {"", "no PEM certificate"},
      {"just text\n", "no PEM certificate"},
      {a + key, "PRIVATE KEY block"},  // a key put there by mistake never goes into the VM
      {"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "does not parse"},
  };
  for (const auto& [text, why] : cases) {
    write(dir.path() + "/x.pem", text);
    auto pem = readCaCertificates(dir.path() + "/x.pem");
    ASSERT_FALSE(pem) << text;
    EXPECT_EQ(pem.error().code, exit_code::kUsage);
    EXPECT_NE(pem.error().message.find(why), std::string::npos) << pem.error().message;
  }
  auto missing = readCaCertificates(dir.path() + "/none.pem");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, exit_code::kUsage);
  write(dir.path() + "/big.pem", std::string(kMaxCaCertificatesBytes + 1, 'x'));
  EXPECT_FALSE(readCaCertificates(dir.path() + "/big.pem"));
}

}  // namespace
}  // namespace airlock
