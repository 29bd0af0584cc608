#include "workspace/private_key_scan.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/encoding.h"
#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

// Neither half is a marker alone. The two whole-string markers are joined at
// run time: adjacent literals would be merged into one in the binary, which
// would then be kept out of a snapshot of airlock's own build tree.
constexpr std::string_view kBegin = "-----BEGIN ";
constexpr std::string_view kBeginSsh2 = "---- BEGIN ";  // "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
constexpr std::string_view kPrivateKey = "PRIVATE KEY";
const std::string kPutty = std::string("PuTTY-User-") + "Key-File-";
const std::string kAge = std::string("AGE-SECRET-") + "KEY-1";
/// Longest label between "BEGIN " and "PRIVATE KEY" ("SSH2 ENCRYPTED " is 15).
constexpr size_t kMaxLabel = 40;
/// Longer than any marker, so one split across two chunks is whole in carry + head.
constexpr size_t kCarry = 96;

/// The base64 text of "PRIVATE KEY-----" (every PEM key's BEGIN and END
/// line) starting at each of the three byte offsets modulo 3: only the
/// characters that its bytes alone decide (19 to 21 of them).
const std::array<std::string, 3>& base64Markers() {
  static const std::array<std::string, 3> all = [] {
    const std::string needle = std::string(kPrivateKey) + "-----";
    std::array<std::string, 3> out;
    for (size_t k = 0; k < 3; ++k) {
      std::string enc = base64Encode(std::string(k, '\0') + needle);
      size_t first = (8 * k + 5) / 6;                 // first character with no filler bits
      size_t last = (8 * (k + needle.size())) / 6;    // one past the last whole character
      out[k] = enc.substr(first, last - first);
    }
    return out;
  }();
  return all;
}

bool labelChar(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' '; }

bool contains(std::string_view text, std::string_view needle) {
  return ::memmem(text.data(), text.size(), needle.data(), needle.size()) != nullptr;
}

}  // namespace

bool hasPrivateKeyMarker(std::string_view text) {
  if (contains(text, kPutty) || contains(text, kAge)) return true;
  for (const auto& m : base64Markers())
    if (contains(text, m)) return true;
  for (size_t pos = 0;;) {
    const void* hit = ::memmem(text.data() + pos, text.size() - pos, kPrivateKey.data(), kPrivateKey.size());
    if (!hit) return false;
    size_t at = static_cast<size_t>(static_cast<const char*>(hit) - text.data());
    size_t lo = at > kMaxLabel + kBegin.size() ? at - kMaxLabel - kBegin.size() : 0;
    std::string_view before = text.substr(lo, at - lo);
    for (std::string_view begin : {kBegin, kBeginSsh2}) {
      size_t b = before.rfind(begin);
      if (b == std::string_view::npos) continue;
      std::string_view label = before.substr(b + begin.size());
      bool ok = true;
      for (char c : label) ok = ok && labelChar(c);
      if (ok) return true;
    }
    pos = at + 1;
  }
}

void PrivateKeyScanner::feed(std::string_view chunk) {
  if (found_ || chunk.empty()) return;
  if (!carry_.empty()) {
    std::string seam = carry_;
    seam.append(chunk.substr(0, kCarry));
    if (hasPrivateKeyMarker(seam)) {
      found_ = true;
      return;
    }
  }
  if (hasPrivateKeyMarker(chunk)) {
    found_ = true;
    return;
  }
  if (chunk.size() >= kCarry) {
    carry_.assign(chunk.substr(chunk.size() - kCarry));
  } else {
    carry_.append(chunk);
    if (carry_.size() > kCarry) carry_.erase(0, carry_.size() - kCarry);
  }
}

Result<bool> fdHoldsPrivateKey(int fd, std::string_view what) {
  PrivateKeyScanner scan;
  static thread_local char buf[1 << 17];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot read {}: {}", displayPath(what), errnoText(errno));
    }
    if (n == 0) break;
    scan.feed(std::string_view(buf, static_cast<size_t>(n)));
    if (scan.found()) return true;
  }
  return false;
}

}  // namespace airlock::workspace
