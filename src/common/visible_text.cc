#include "common/visible_text.h"

#include <fmt/format.h>

namespace airlock {
namespace {

/// Length of the valid UTF-8 sequence at the start of `s` (1-4), with its code
/// point in `*cp`; 0 when it is not valid (overlong, surrogate, past U+10FFFF,
/// truncated, stray continuation byte).
size_t utf8Length(std::string_view s, char32_t* cp) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = b(0);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) len = 2;
  else if (c >= 0xe0 && c <= 0xef) len = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) len = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (s.size() < len || b(1) < lo || b(1) > hi) return 0;
  char32_t v = c & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(k) & 0x3f);
  }
  *cp = v;
  return len;
}

/// Code points that are invisible, reorder text or act as controls.
bool hiddenCodePoint(char32_t c) {
  return (c >= 0x80 && c <= 0x9f) || c == 0xad || c == 0x61c || c == 0x180e || (c >= 0x200b && c <= 0x200f) ||
         (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x2064) || (c >= 0x2066 && c <= 0x206f) ||
         c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe0000 && c <= 0xe007f);
}

}  // namespace

std::string visibleText(std::string_view text, const VisibleOptions& opt, bool* escaped) {
  std::string out;
  out.reserve(text.size());
  bool any = false;
  size_t i = 0;
  auto mark = [&](const std::string& esc) {
    out += opt.markOn;
    out += esc;
    out += opt.markOff;
    any = true;
  };
  while (i < text.size()) {
    char32_t cp = 0;
    size_t len = utf8Length(text.substr(i), &cp);
    auto byte = static_cast<unsigned char>(text[i]);
    if (len == 0 || (len == 1 && ((byte < 0x20 && !(byte == '\t' && opt.keepTabs)) || byte == 0x7f))) {
      mark(fmt::format("\\x{:02x}", byte));
      ++i;
      continue;
    }
    if (len == 1 && byte == '\\' && opt.escapeBackslash) {
      out += "\\x5c";
    } else if (hiddenCodePoint(cp)) {
      mark(cp > 0xffff ? fmt::format("\\U{:08x}", static_cast<uint32_t>(cp))
                       : fmt::format("\\u{:04x}", static_cast<uint32_t>(cp)));
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  if (escaped) *escaped = any;
  return out;
}

bool hasNonAscii(std::string_view text) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return true;
  return false;
}

}  // namespace airlock
