#include "common/sha256.h"

#include "common/encoding.h"

#include <fcntl.h>
#include <openssl/evp.h>

#include <cerrno>

#include "common/fd.h"

namespace airlock {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr); }

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(std::string_view data) { EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size()); }

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len);
  return hexEncode(std::string_view(reinterpret_cast<const char*>(md), len));
}

std::string sha256Hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

Result<std::string> sha256File(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return fail("cannot read {}: {}", path, errnoText(errno));
  Sha256 h;
  static thread_local char buf[1 << 17];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot read {}: {}", path, errnoText(errno));
    }
    if (n == 0) break;
    h.update(std::string_view(buf, static_cast<size_t>(n)));
  }
  return h.hex();
}

}  // namespace airlock
