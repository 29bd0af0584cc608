#pragma once
// The user's extra CA certificates (`extra_ca_certs`) for a run's guest.

#include "agents/agent_env.h"
#include "common/error.h"
#include "config/settings.h"
#include "session/plan.h"

namespace airlock::cli {

/// With `extra_ca_certs` set: its certificates (readCaCertificates) go into
/// the plan, which writes them with the image's bundle at guest::kCaBundle,
/// and the agent's TLS clients are pointed there (SSL_CERT_FILE for
/// OpenSSL and rustls, NODE_EXTRA_CA_CERTS for Node and Bun,
/// REQUESTS_CA_BUNDLE for Python's requests). Errors (64): the file is not
/// certificates (common/ca_certificates.h).
Result<> applyExtraCaCertificates(const config::Settings& settings, session::Plan& plan, agents::EnvMap& env);

}  // namespace airlock::cli
