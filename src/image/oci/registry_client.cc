#include "image/oci/registry_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/interrupt.h"
#include "common/sha256.h"
#include "image/oci/registry_auth.h"

namespace airlock::image::oci {

struct RegistryClient::Response {
  long status = 0;
  std::string contentType;
  std::string wwwAuthenticate;
  std::string errorBody;  ///< first bytes of a non-2xx body
};

namespace {

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

void globalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool isTlsFailure(CURLcode c) {
  return c == CURLE_SSL_CONNECT_ERROR || c == CURLE_SSL_CIPHER || c == CURLE_SSL_CERTPROBLEM ||
         c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CACERT_BADFILE;
}

bool isTransientStatus(long s) { return s == 408 || s == 429 || s >= 500; }

std::string trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return std::string(s);
}

std::string urlEncode(CURL* c, const std::string& s) {
  char* e = curl_easy_escape(c, s.c_str(), static_cast<int>(s.size()));
  std::string out = e ? e : "";
  curl_free(e);
  return out;
}

// State of one curl transfer, shared with the header and body callbacks.
struct Transfer {
  std::string contentType;
  std::string wwwAuthenticate;
  std::string errorBody;
  const std::function<bool(long, const char*, size_t)>* sink;
  CURL* curl;
  bool sinkFailed = false;
};

size_t onHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect or 100)
    t->contentType.clear();
    t->wwwAuthenticate.clear();
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string key = asciiLower(line.substr(0, colon));
    if (key == "content-type") t->contentType = trim(line.substr(colon + 1));
    if (key == "www-authenticate") t->wwwAuthenticate = trim(line.substr(colon + 1));
  }
  return size * n;
}

size_t onBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    if (t->errorBody.size() < 2048) t->errorBody.append(data, std::min<size_t>(size * n, 2048 - t->errorBody.size()));
    return size * n;
  }
  if (!(*t->sink)(status, data, size * n)) {
    t->sinkFailed = true;
    return 0;
  }
  return size * n;
}

// Ends a transfer once airlock was interrupted (common/interrupt.h).
int onProgress(void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) { return interruptSignal() != 0 ? 1 : 0; }

// The registry's error JSON ({"errors":[{"code","message"}]}) as one line.
std::string describeError(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    auto errs = j.find("errors");
    if (errs != j.end() && errs->is_array() && !errs->empty() && (*errs)[0].is_object()) {
      const auto& e = (*errs)[0];
      auto code = e.find("code");
      auto msg = e.find("message");
      return fmt::format("{}: {}", code != e.end() && code->is_string() ? code->get<std::string>() : "?",
                         msg != e.end() && msg->is_string() ? msg->get<std::string>() : "");
    }
  }
  return trim(body.substr(0, 200));
}

}  // namespace

RegistryClient::RegistryClient(const ImageRef& ref, RegistryOptions options) : ref_(ref), options_(std::move(options)) {
  globalInit();
  allowHttp_ = isLoopbackHost(ref_.registry) ||
               std::find(options_.insecureRegistries.begin(), options_.insecureRegistries.end(), ref_.registry) !=
                   options_.insecureRegistries.end();
}

std::string RegistryClient::authHeader() {
  std::lock_guard lock(mu_);
  return authHeader_;
}

Result<RegistryClient::Response> RegistryClient::sendOnce(const std::string& url, const std::vector<std::string>& headers,
                                                          const Sink& sink) {
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) return failWith(exit_code::kInternal, "cannot initialize libcurl");
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  std::unique_ptr<curl_slist, SlistFree> headerList(list);
  Transfer t{{}, {}, {}, &sink, curl.get()};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, allowHttp_ ? "http,https" : "https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, allowHttp_ ? "http,https" : "https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "airlock/0.1");
  if (!options_.caCert.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, options_.caCert.c_str());
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, onHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, onProgress);
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  CURLcode code = curl_easy_perform(c);
  if (int sig = interruptSignal(); sig != 0)
    return std::unexpected(interruptedError(sig, "during the download from " + url));
  if (t.sinkFailed) return failWith(exit_code::kInternal, "writing the download from {} failed: {}", url, errnoText(errno));
  if (code != CURLE_OK) {
    Error e{fmt::format("cannot reach {}: {}", url, *errbuf ? errbuf : curl_easy_strerror(code)), exit_code::kImage};
    if (isTlsFailure(code)) e.code = -static_cast<int>(code);  // marks TLS failures for send()
    return std::unexpected(e);
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  return Response{status, std::move(t.contentType), std::move(t.wwwAuthenticate), std::move(t.errorBody)};
}

Result<RegistryClient::Response> RegistryClient::send(const std::string& path, const std::vector<std::string>& extra,
                                                      const Sink& sink, int attempts) {
  bool authTried = false;
  auto delay = options_.backoff;
  for (int attempt = 1;; ++attempt) {
    std::vector<std::string> headers = extra;
    if (auto auth = authHeader(); !auth.empty()) headers.push_back(auth);
    std::string scheme;
    {
      std::lock_guard lock(mu_);
      scheme = scheme_;
    }
    auto r = sendOnce(scheme + "://" + ref_.endpoint() + path, headers, sink);
    if (!r && r.error().code < 0) {
      // A plain-HTTP loopback or --insecure-registry registry fails the TLS
      // handshake; one that speaks TLS with a certificate we cannot verify
      // must not be downgraded to plain HTTP.
      const bool untrustedCert = r.error().code == -static_cast<int>(CURLE_PEER_FAILED_VERIFICATION);
      if (allowHttp_ && scheme == "https" && !untrustedCert) {
        std::lock_guard lock(mu_);
        scheme_ = "http";
        continue;
      }
      if (untrustedCert)
        return failWith(exit_code::kImage, "{} (the certificate of registry {} is not trusted; pass its CA with --ca-cert FILE)",
                        r.error().message, ref_.registry);
      return failWith(exit_code::kImage, "{} (use --ca-cert FILE for a private CA)", r.error().message);
    }
    if (!r && isInterruption(r.error().code)) return r;  // no retry
    bool transient = r ? isTransientStatus(r->status) : r.error().code == exit_code::kImage;
    if (transient && attempt < attempts) {
      std::this_thread::sleep_for(delay);
      delay *= 2;
      continue;
    }
    if (!r) return std::unexpected(Error{r.error().message + fmt::format(" (after {} attempts)", attempt), exit_code::kImage});
    if (r->status == 401 && !authTried && !r->wwwAuthenticate.empty()) {
      authTried = true;
      if (auto a = authenticate(r->wwwAuthenticate); !a) return std::unexpected(a.error());
      --attempt;
      continue;
    }
    return r;
  }
}

Result<> RegistryClient::authenticate(const std::string& challengeHeader) {
  auto challenge = parseChallenge(challengeHeader);
  if (!challenge) return std::unexpected(challenge.error());
  auto creds = lookupCredentials(ref_.registry, options_.dockerConfigDir);
  if (!creds) return failWith(exit_code::kImage, "{}", creds.error().message);
  if (challenge->scheme == "basic") {
    if (creds->empty())
      return failWith(exit_code::kImage, "registry {} wants a user name and password; log in with `docker login {}`",
                      ref_.registry, ref_.registry);
    std::lock_guard lock(mu_);
    authHeader_ = "Authorization: Basic " + base64Encode(creds->username + ":" + creds->password);
    return {};
  }
  if (challenge->scheme != "bearer")
    return failWith(exit_code::kImage, "registry {} asks for '{}' authentication, which airlock does not support",
                    ref_.registry, challenge->scheme);
  const std::string realm = challenge->params["realm"];
  if (!realm.starts_with("https://") && !(allowHttp_ && realm.starts_with("http://")))
    return failWith(exit_code::kImage, "registry {} sent a token realm '{}' that is not an https URL", ref_.registry, realm);
  std::unique_ptr<CURL, CurlFree> esc(curl_easy_init());
  std::string scope = challenge->params.count("scope") ? challenge->params["scope"] : "repository:" + ref_.repository + ":pull";
  std::string url = realm + (realm.find('?') == std::string::npos ? "?" : "&") +
                    "scope=" + urlEncode(esc.get(), scope);
  if (challenge->params.count("service")) url += "&service=" + urlEncode(esc.get(), challenge->params["service"]);
  std::vector<std::string> headers;
  if (!creds->empty()) headers.push_back("Authorization: Basic " + base64Encode(creds->username + ":" + creds->password));
  std::string body;
  Sink sink = [&](long, const char* d, size_t n) {
    if (body.size() + n > (1 << 20)) return false;
    body.append(d, n);
    return true;
  };
  auto r = sendOnce(url, headers, sink);
  if (!r) return failWith(exit_code::kImage, "getting a token for {}: {}", ref_.registry, r.error().message);
  if (r->status == 401 || r->status == 403)
    return failWith(exit_code::kImage, "registry {} refused the {} for {} ({}); check `docker login {}`", ref_.registry,
                    creds->empty() ? "anonymous token request" : "credentials", ref_.repository, r->status, ref_.registry);
  if (r->status != 200)
    return failWith(exit_code::kImage, "token service of {} answered HTTP {}: {}", ref_.registry, r->status,
                    describeError(r->errorBody));
  auto j = nlohmann::json::parse(body, nullptr, false);
  std::string token;
  if (!j.is_discarded() && j.is_object()) {
    if (auto t = j.find("token"); t != j.end() && t->is_string()) token = t->get<std::string>();
    else if (auto a = j.find("access_token"); a != j.end() && a->is_string()) token = a->get<std::string>();
  }
  if (token.empty()) return failWith(exit_code::kImage, "token service of {} returned no token", ref_.registry);
  std::lock_guard lock(mu_);
  authHeader_ = "Authorization: Bearer " + token;
  return {};
}

Result<FetchedManifest> RegistryClient::fetchManifest(const std::string& reference) {
  FetchedManifest m;
  Sink sink = [&](long, const char* d, size_t n) {
    if (m.body.size() + n > (4 << 20)) return false;  // manifests are small; refuse a flood
    m.body.append(d, n);
    return true;
  };
  auto r = send("/v2/" + ref_.repository + "/manifests/" + reference, {manifestAcceptHeader()}, sink, options_.attempts);
  if (!r) return std::unexpected(r.error());
  if (r->status == 404)
    return failWith(exit_code::kImage, "{}/{}:{} was not found on the registry ({})", ref_.registry, ref_.repository,
                    reference, describeError(r->errorBody));
  if (r->status == 401 || r->status == 403)
    return failWith(exit_code::kImage, "registry {} denied access to {} (HTTP {}); check `docker login {}`", ref_.registry,
                    ref_.repository, r->status, ref_.registry);
  if (r->status != 200)
    return failWith(exit_code::kImage, "registry {} answered HTTP {} for the manifest of {}: {}", ref_.registry, r->status,
                    ref_.repository, describeError(r->errorBody));
  m.contentType = r->contentType;
  m.digest = "sha256:" + sha256Hex(m.body);
  if (isValidDigest(reference) && reference != m.digest)
    return failWith(exit_code::kImage, "the manifest served for {} hashes to {}; it was refused", reference, m.digest);
  return m;
}

Result<uint64_t> RegistryClient::fetchBlob(const Descriptor& blob, const std::string& dest, const BlobProgressFn& progress) {
  const std::string partial = dest + ".partial";
  Fd fd(::open(partial.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) return failWith(exit_code::kImage, "cannot create {}: {}", partial, errnoText(errno));
  if (::flock(fd.get(), LOCK_EX) != 0) return failWith(exit_code::kImage, "cannot lock {}: {}", partial, errnoText(errno));
  struct stat st {};
  if (::stat(dest.c_str(), &st) == 0) {  // another process finished it while we waited
    struct stat mine {};
    if (::fstat(fd.get(), &mine) == 0 && (mine.st_ino != st.st_ino || mine.st_dev != st.st_dev)) ::unlink(partial.c_str());
    return uint64_t{0};
  }
  if (::fstat(fd.get(), &st) != 0) return failWith(exit_code::kImage, "cannot stat {}: {}", partial, errnoText(errno));
  uint64_t have = static_cast<uint64_t>(st.st_size);
  if (have > blob.size) have = 0;
  // Hash what is already there, then keep hashing as bytes arrive.
  auto hasher = std::make_unique<Sha256>();
  auto restart = [&]() -> bool {
    hasher = std::make_unique<Sha256>();
    have = 0;
    return ::ftruncate(fd.get(), 0) == 0 && ::lseek(fd.get(), 0, SEEK_SET) == 0;
  };
  if (have > 0) {
    std::string buf(1 << 16, '\0');
    uint64_t left = have;
    ::lseek(fd.get(), 0, SEEK_SET);
    while (left > 0) {
      ssize_t n = readFull(fd.get(), buf.data(), std::min<uint64_t>(left, buf.size()));
      if (n <= 0) return failWith(exit_code::kImage, "cannot read {}: {}", partial, errnoText(errno));
      hasher->update(std::string_view(buf.data(), static_cast<size_t>(n)));
      left -= static_cast<uint64_t>(n);
    }
  } else if (!restart()) {
    return failWith(exit_code::kImage, "cannot truncate {}: {}", partial, errnoText(errno));
  }
  ::lseek(fd.get(), static_cast<off_t>(have), SEEK_SET);
  uint64_t transferred = 0;
  bool resumedOnce = have > 0;
  for (int round = 0; round <= options_.attempts && have < blob.size; ++round) {
    const uint64_t start = have;
    bool firstChunk = true;
    Sink sink = [&](long status, const char* d, size_t n) {
      if (firstChunk) {
        firstChunk = false;
        if (status == 200 && start > 0 && !restart()) return false;  // the server ignored Range
      }
      if (have + n > blob.size) {
        errno = EFBIG;
        return false;
      }
      if (!writeAll(fd.get(), std::string_view(d, n))) return false;
      hasher->update(std::string_view(d, n));
      have += n;
      transferred += n;
      if (progress) progress(have, blob.size);
      return true;
    };
    std::vector<std::string> headers;
    if (start > 0) headers.push_back(fmt::format("Range: bytes={}-", start));
    // One try per round: a retry must ask for a new Range, from what arrived.
    auto r = send("/v2/" + ref_.repository + "/blobs/" + blob.digest, headers, sink, 1);
    if (!r) {
      if (have >= blob.size) break;  // more bytes than announced: verification below refuses it
      if (round < options_.attempts && r.error().code == exit_code::kImage) {
        std::this_thread::sleep_for(options_.backoff * (1 << round));
        continue;
      }
      return std::unexpected(r.error());
    }
    if (isTransientStatus(r->status) && round < options_.attempts) {
      std::this_thread::sleep_for(options_.backoff * (1 << round));
      continue;
    }
    if (r->status == 416) break;  // nothing past `start`: verification below decides
    if (r->status != 200 && r->status != 206)
      return failWith(exit_code::kImage, "registry {} answered HTTP {} for blob {} of {}: {}", ref_.registry, r->status,
                      blob.digest, ref_.repository, describeError(r->errorBody));
  }
  std::string got = "sha256:" + hasher->hex();
  if (have != blob.size || got != blob.digest) {
    if (resumedOnce && restart()) {  // a stale partial file: try once from scratch
      fd.reset();
      ::unlink(partial.c_str());
      auto again = fetchBlob(blob, dest, progress);
      if (again) return *again + transferred;
      return again;
    }
    ::unlink(partial.c_str());
    return failWith(exit_code::kImage,
                    "blob {} of {}/{} failed verification: got {} bytes hashing to {}; it was refused and not cached",
                    blob.digest, ref_.registry, ref_.repository, have, got);
  }
  if (::fsync(fd.get()) != 0 || ::rename(partial.c_str(), dest.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot store blob {}: {}", dest, errnoText(errno));
  return transferred;
}

}  // namespace airlock::image::oci
