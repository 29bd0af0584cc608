#include "cli/extra_ca.h"

#include "common/ca_certificates.h"
#include "vm/guest_contract.h"

namespace airlock::cli {

Result<> applyExtraCaCertificates(const config::Settings& settings, session::Plan& plan, agents::EnvMap& env) {
  if (!settings.extraCaCerts) return {};
  auto pem = readCaCertificates(settings.extraCaCerts->value);
  if (!pem) return std::unexpected(pem.error());
  plan.extraCaCertificates = std::move(*pem);
  for (const char* name : {"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE"}) env[name] = guest::kCaBundle;
  return {};
}

}  // namespace airlock::cli
