#pragma once
// CA certificates the user adds to what the guest trusts (the
// `extra_ca_certs` setting: a TLS-inspecting proxy's CA, a local test CA).

#include <string>

#include "common/error.h"

namespace airlock {

/// The largest extra_ca_certs file read.
inline constexpr size_t kMaxCaCertificatesBytes = 1 << 20;

/// The X.509 certificates of PEM file `path`, each re-encoded by OpenSSL
/// (nothing else of the file is passed on). Errors (exit code 64):
/// unreadable, over kMaxCaCertificatesBytes, no certificate, a PEM block
/// that is not a certificate (a private key put there by mistake is refused
/// rather than copied into the VM), a certificate that does not parse.
Result<std::string> readCaCertificates(const std::string& path);

}  // namespace airlock
