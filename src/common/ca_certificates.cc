#include "common/ca_certificates.h"

#include <memory>

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/exit_codes.h"
#include "common/fd.h"

namespace airlock {

Result<std::string> readCaCertificates(const std::string& path) {
  auto text = readFile(path, kMaxCaCertificatesBytes);
  if (!text) return failWith(exit_code::kUsage, "extra_ca_certs: {}", text.error().message);
  std::unique_ptr<BIO, decltype(&BIO_free)> in(BIO_new_mem_buf(text->data(), static_cast<int>(text->size())), BIO_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), BIO_free);
  if (!in || !out) return fail("extra_ca_certs: out of memory");
  int certificates = 0;
  for (;;) {
    char* name = nullptr;
    char* header = nullptr;
    unsigned char* data = nullptr;
    long length = 0;
    if (PEM_read_bio(in.get(), &name, &header, &data, &length) != 1) break;
    const std::string type = name;
    const unsigned char* p = data;
    std::unique_ptr<X509, decltype(&X509_free)> cert(type == "CERTIFICATE" ? d2i_X509(nullptr, &p, length) : nullptr,
                                                     X509_free);
    OPENSSL_free(name);
    OPENSSL_free(header);
    OPENSSL_free(data);
    if (type != "CERTIFICATE")
      return failWith(exit_code::kUsage, "extra_ca_certs: {} holds a {} block; only certificates go into the VM",
                      path, type.size() > 40 ? type.substr(0, 40) : type);
    if (!cert) return failWith(exit_code::kUsage, "extra_ca_certs: a certificate in {} does not parse", path);
    if (PEM_write_bio_X509(out.get(), cert.get()) != 1) return fail("extra_ca_certs: cannot encode a certificate");
    ++certificates;
  }
  if (certificates == 0)
    return failWith(exit_code::kUsage, "extra_ca_certs: {} has no PEM certificate (-----BEGIN CERTIFICATE-----)", path);
  char* pem = nullptr;
  long size = BIO_get_mem_data(out.get(), &pem);
  return std::string(pem, static_cast<size_t>(size));
}

}  // namespace airlock
