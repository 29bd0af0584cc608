#include "workspace/relpath.h"

#include <algorithm>

#include "common/visible_text.h"

namespace airlock::workspace {

Result<std::string> normalizeRelative(std::string_view raw) {
  if (raw.find('\0') != std::string_view::npos)
    return fail("entry '{}' has a NUL byte in its name; the change set is corrupt or hostile", displayPath(raw));
  if (raw.empty()) return fail("an entry has an empty name; the change set is corrupt");
  if (raw.front() == '/')
    return fail("entry '{}' has an absolute path; only paths relative to the workspace are allowed", displayPath(raw));
  if (raw.size() > 4096) return fail("entry '{}...' has a path longer than 4096 bytes", displayPath(raw.substr(0, 64)));
  std::string out;
  size_t pos = 0;
  bool leading = true;
  while (pos <= raw.size()) {
    size_t slash = raw.find('/', pos);
    if (slash == std::string_view::npos) slash = raw.size();
    std::string_view part = raw.substr(pos, slash - pos);
    pos = slash + 1;
    if (part.empty()) continue;
    if (part == "." && leading) continue;
    if (part == "." || part == "..")
      return fail("entry '{}' has a '{}' component; paths must stay inside the workspace", displayPath(raw), part);
    if (part.size() > 255) return fail("entry '{}' has a name component longer than 255 bytes", displayPath(raw));
    leading = false;
    if (!out.empty()) out.push_back('/');
    out.append(part);
  }
  return out;
}

std::string_view parentPath(std::string_view rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string_view::npos ? std::string_view{} : rel.substr(0, slash);
}

std::string_view baseName(std::string_view rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string_view::npos ? rel : rel.substr(slash + 1);
}

size_t pathDepth(std::string_view rel) {
  return rel.empty() ? 0 : 1 + static_cast<size_t>(std::count(rel.begin(), rel.end(), '/'));
}

std::string percentEncode(std::string_view raw) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(raw.size());
  for (unsigned char c : raw) {
    if (c == '%' || c < 0x21 || c >= 0x7f) {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

Result<std::string> percentDecode(std::string_view encoded) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] != '%') {
      out.push_back(encoded[i]);
      continue;
    }
    if (i + 2 >= encoded.size()) return fail("malformed escape in '{}'", encoded);
    int hi = nibble(encoded[i + 1]), lo = nibble(encoded[i + 2]);
    if (hi < 0 || lo < 0) return fail("malformed escape in '{}'", encoded);
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

std::string displayPath(std::string_view rel) { return visibleText(rel, {.escapeBackslash = true}); }

}  // namespace airlock::workspace
