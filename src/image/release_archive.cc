#include "image/release_archive.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/interrupt.h"
#include "common/paths.h"
#include "common/sha256.h"

namespace airlock::image {
namespace {

/// Largest archive taken (a download or a --from file).
constexpr curl_off_t kMaxArchiveBytes = curl_off_t{1} << 30;

bool isPlainName(std::string_view s) {
  if (s.empty() || s.size() > 255 || s == "." || s == ".." || s.front() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-' || c == '+'))
      return false;
  return true;
}

bool isSha256Hex(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

/// The string at `key` of `o`, or empty.
std::string text(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// A download into an open file, hashed on the way.
struct Download {
  int fd = -1;
  Sha256 hash;
  curl_off_t bytes = 0;
  int writeErrno = 0;  ///< errno of a failed write, 0 when none failed
  ProgressFn progress;
  curl_off_t reported = 0;
};

size_t onBody(char* data, size_t size, size_t count, void* user) {
  auto* d = static_cast<Download*>(user);
  const size_t n = size * count;
  d->bytes += static_cast<curl_off_t>(n);
  if (d->bytes > kMaxArchiveBytes) return 0;
  if (!writeAll(d->fd, std::string_view(data, n))) {
    d->writeErrno = errno;
    return 0;
  }
  d->hash.update(std::string_view(data, n));
  return n;
}

int onProgress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* d = static_cast<Download*>(user);
  if (interruptSignal() != 0) return 1;
  constexpr curl_off_t kStep = curl_off_t{16} << 20;
  if (total > 0 && now >= d->reported + kStep) {
    d->reported = now;
    report(d->progress, fmt::format("downloaded {} of {} MiB", now >> 20, total >> 20));
  }
  return 0;
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

/// Downloads `url` into the new file `dest`; returns its SHA-256.
Result<std::string> download(const std::string& url, const std::string& dest, const ProgressFn& progress) {
  Fd fd(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) return failWith(exit_code::kImage, "cannot create {}: {}", dest, errnoText(errno));
  static std::once_flag once;
  static CURLcode init = CURLE_OK;
  std::call_once(once, [] { init = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (init != CURLE_OK)
    return failWith(exit_code::kInternal, "cannot initialize libcurl: {}", curl_easy_strerror(init));
  std::unique_ptr<CURL, CurlFree> curl(curl_easy_init());
  if (!curl) return failWith(exit_code::kInternal, "cannot initialize libcurl");
  Download d;
  d.fd = fd.get();
  d.progress = progress;
  CURL* c = curl.get();
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "https");
  curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
  curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, kMaxArchiveBytes);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);  // bytes/s over LOW_SPEED_TIME: no endless trickle
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 3600L);  // a ceiling: a server cannot hold a build for days
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "airlock/0.1");
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, onBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, onProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &d);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  const CURLcode code = curl_easy_perform(c);
  if (int sig = interruptSignal(); sig != 0)
    return std::unexpected(interruptedError(sig, "during the download from " + url));
  if (d.writeErrno != 0) return failWith(exit_code::kImage, "cannot write {}: {}", dest, errnoText(d.writeErrno));
  if (d.bytes > kMaxArchiveBytes) return failWith(exit_code::kImage, "{} is larger than 1 GiB", url);
  if (code != CURLE_OK) return failWith(exit_code::kImage, "{}", *errbuf ? errbuf : curl_easy_strerror(code));
  if (::fsync(fd.get()) != 0) return failWith(exit_code::kImage, "cannot sync {}: {}", dest, errnoText(errno));
  return d.hash.hex();
}

/// Copies the regular file `from` (not through a symlink) into the new file
/// `dest`; returns its SHA-256.
Result<std::string> copyIn(const std::string& from, const std::string& dest) {
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!in) return failWith(exit_code::kImage, "cannot open {}: {}", from, errnoText(errno));
  struct stat st {};
  if (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return failWith(exit_code::kImage, "{} is not a regular file", from);
  if (st.st_size > kMaxArchiveBytes) return failWith(exit_code::kImage, "{} is larger than 1 GiB", from);
  Fd out(::open(dest.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!out) return failWith(exit_code::kImage, "cannot create {}: {}", dest, errnoText(errno));
  Sha256 hash;
  curl_off_t copied = 0;
  std::string buf(1 << 20, '\0');
  for (;;) {
    ssize_t n = ::read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return failWith(exit_code::kImage, "cannot read {}: {}", from, errnoText(errno));
    if (n == 0) break;
    copied += n;
    if (copied > kMaxArchiveBytes) return failWith(exit_code::kImage, "{} is larger than 1 GiB", from);
    const std::string_view chunk(buf.data(), static_cast<size_t>(n));
    hash.update(chunk);
    if (!writeAll(out.get(), chunk)) return failWith(exit_code::kImage, "cannot write {}: {}", dest, errnoText(errno));
  }
  if (::fsync(out.get()) != 0) return failWith(exit_code::kImage, "cannot sync {}: {}", dest, errnoText(errno));
  return hash.hex();
}

}  // namespace

Result<ReleaseArchive> parseReleaseArchive(std::string_view packageJson, std::string_view platform,
                                           std::string_view package) {
  auto doc = nlohmann::json::parse(packageJson, nullptr, false);
  const auto fail = [&](std::string_view what) -> Result<ReleaseArchive> {
    return failWith(exit_code::kImage, "{}: package.json \"archives\" {}", package, what);
  };
  if (!doc.is_object() || !doc.contains("archives") || !doc["archives"].is_object())
    return fail("is missing: the package names no release archive");
  const auto& archives = doc["archives"];
  auto entry = archives.find(std::string(platform));
  if (entry == archives.end() || !entry->is_object()) return fail(fmt::format("has no entry for {}", platform));
  ReleaseArchive a{text(*entry, "name"), text(*entry, "url"), "", text(*entry, "wrappedIn")};
  if (!isPlainName(a.name)) return fail(fmt::format("{}: \"name\" is not a plain file name", platform));
  const bool printable = std::all_of(a.url.begin(), a.url.end(), [](char c) { return c > 0x20 && c < 0x7f; });
  if (!a.url.starts_with("https://") || !printable)
    return fail(fmt::format("{}: \"url\" is not an https URL", platform));
  if (text(*entry, "format") != "tar.gz") return fail(fmt::format("{}: \"format\" is not tar.gz", platform));
  if (!a.wrappedIn.empty() && !isPlainName(a.wrappedIn))
    return fail(fmt::format("{}: \"wrappedIn\" is not a plain folder name", platform));
  auto checksum = entry->find("checksum");
  if (checksum == entry->end() || !checksum->is_object() || text(*checksum, "algorithm") != "sha256" ||
      !isSha256Hex(text(*checksum, "digest")))
    return fail(fmt::format("{}: \"checksum\" is not a sha256 digest (64 lowercase hex digits)", platform));
  a.sha256 = text(*checksum, "digest");
  return a;
}

std::string releaseArchivePath(const std::string& cacheDir, const ReleaseArchive& archive) {
  return fmt::format("{}/downloads/archives/{}-{}", cacheDir, archive.sha256, archive.name);
}

Result<std::string> fetchReleaseArchive(const std::string& cacheDir, const ReleaseArchive& archive,
                                        const std::string& fromDir, const std::string& agent,
                                        const ProgressFn& progress) {
  const std::string cached = releaseArchivePath(cacheDir, archive);
  if (pathExists(cached)) return cached;
  const std::string dir = cacheDir + "/downloads/archives";
  if (auto r = makeDirs(dir); !r) return failWith(exit_code::kImage, "{}", r.error().message);
  auto lock = FileLock::acquire(dir + "/.lock", "downloading release archives", progress);
  if (!lock) return failWith(exit_code::kImage, "{}", lock.error().message);
  if (pathExists(cached)) return cached;
  if (auto r = removeStaleBuilds(dir); !r) return std::unexpected(r.error());
  auto work = TempDir::create(dir, "tmp-");
  if (!work) return std::unexpected(work.error());
  const std::string part = work->path() + "/" + archive.name;
  Result<std::string> got;
  if (!fromDir.empty()) {
    report(progress, fmt::format("taking {} from {}", archive.name, fromDir));
    got = copyIn(fromDir + "/" + archive.name, part);
  } else {
    report(progress, fmt::format("downloading {}", archive.url));
    got = download(archive.url, part, progress);
    if (!got && !isInterruption(got.error().code))
      return failWith(exit_code::kImage,
                      "cannot download {}: {}; on a host that cannot reach it, fetch the file elsewhere and run "
                      "`airlock image build {} --from DIR` with it in DIR",
                      archive.url, got.error().message, agent);
  }
  if (!got) return std::unexpected(got.error());
  if (*got != archive.sha256)
    return failWith(exit_code::kImage, "{} has SHA-256 {}, but its npm package names {}: refused", archive.name, *got,
                    archive.sha256);
  if (::rename(part.c_str(), cached.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot rename {} to {}: {}", part, cached, errnoText(errno));
  if (auto r = syncPath(dir); !r) return std::unexpected(r.error());
  return cached;
}

}  // namespace airlock::image
