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

/// Code points that are invisible, reorder text, act as controls, or look
/// like nothing or like a plain space while being another character (the
/// "Glassworm" payloads hide code in variation selectors; Hangul fillers are
/// valid JavaScript identifiers that render blank).
bool hiddenCodePoint(char32_t c) {
  auto in = [c](char32_t lo, char32_t hi) { return c >= lo && c <= hi; };
  return in(0x80, 0x9f) || c == 0xa0 || c == 0xad || c == 0x34f || c == 0x61c || c == 0x115f || c == 0x1160 ||
         c == 0x1680 || in(0x17b4, 0x17b5) || in(0x180b, 0x180f) || in(0x2000, 0x200f) || in(0x2028, 0x202f) ||
         in(0x205f, 0x2064) || in(0x2066, 0x206f) || c == 0x2800 || c == 0x3000 || c == 0x3164 ||
         in(0xe000, 0xf8ff) || in(0xfdd0, 0xfdef) || in(0xfe00, 0xfe0f) || c == 0xfeff || c == 0xffa0 ||
         in(0xfff0, 0xfffc) || (c & 0xfffe) == 0xfffe || in(0x1d173, 0x1d17a) || in(0xe0000, 0xe007f) ||
         in(0xe0100, 0xe01ef) || in(0xf0000, 0x10ffff);
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
