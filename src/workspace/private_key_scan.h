#pragma once
// Finds private keys by their markers in files of any name, fed the bytes the
// snapshot reads anyway (for the SHA-256). The markers, anywhere in a file
// (so a key inside a JSON or YAML file counts, "\n" escapes and all):
//  - "-----BEGIN <LABEL>PRIVATE KEY" with LABEL only [A-Z0-9 ] (PEM, PKCS#8,
//    "ENCRYPTED ", "RSA ", "EC ", "OPENSSH ", "SSH2 ", "PGP " ... KEY BLOCK),
//    and "---- BEGIN <LABEL>PRIVATE KEY" (SSH2 / RFC 4716 "ENCRYPTED" keys),
//  - a base64-wrapped PEM key (Kubernetes secrets' `tls.key: LS0tLS1CRUdJTi...`,
//    CI variables): the base64 text of "PRIVATE KEY-----" at any of its three
//    alignments, on one line (a line break inside those ~20 characters hides it),
//  - the PuTTY key file header ("PuTTY-User-Key-File" "-" then its version),
//  - an age identity ("AGE-SECRET-KEY" "-1" then the key).
// (Markers in this code are split so that airlock's own sources and binaries
// hold none: a whole one, even in a string literal, keeps a file out.)
// Content that git keeps compressed (.git/objects) shows no marker; nor do keys
// in UTF-16, gzip, DER (binary PKCS#1/PKCS#8), JWK ("d": ...) or XML
// (<RSAKeyValue>...<D>) form, nor lower-case or otherwise altered headers.

#include <string>
#include <string_view>

#include "common/error.h"

namespace airlock::workspace {

/// Stream scanner: feed() the content in chunks of any size, in order; a
/// marker split across chunks is found.
class PrivateKeyScanner {
 public:
  void feed(std::string_view chunk);
  bool found() const { return found_; }

 private:
  std::string carry_;  ///< the last bytes seen, for markers split across chunks
  bool found_ = false;
};

/// True when `text` holds a private-key marker (see the file comment).
bool hasPrivateKeyMarker(std::string_view text);

/// Reads `fd` from its current offset to the end and reports whether it holds
/// a marker; `what` names the file in errors.
Result<bool> fdHoldsPrivateKey(int fd, std::string_view what);

}  // namespace airlock::workspace
