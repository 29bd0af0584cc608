#include "egress/first_bytes.h"

#include <algorithm>
#include <cstdint>

namespace airlock::egress {
namespace {

using State = RequestedName::State;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

/// Sets r to kFound with `raw` in the normal form (lower case, one trailing
/// dot dropped), or to kNone when nothing or an empty label is left
/// ("example.com.." names no host).
RequestedName named(RequestedName r, std::string_view raw) {
  r.name = lower(raw);
  r.state = r.name.empty() || r.name.back() == '.' ? State::kNone : State::kFound;
  if (r.state == State::kNone) r.name.clear();
  return r;
}

/// Reads big-endian integers from a bounded span; any overrun sets `bad`.
struct Reader {
  std::string_view s;
  size_t pos = 0;
  bool bad = false;
  uint32_t get(size_t n) {
    if (pos + n > s.size()) {
      bad = true;
      pos = s.size();
      return 0;
    }
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) v = v << 8 | static_cast<uint8_t>(s[pos++]);
    return v;
  }
  void skip(size_t n) {
    if (pos + n > s.size()) bad = true;
    pos = std::min(s.size(), pos + n);
  }
};

RequestedName tlsSni(std::string_view bytes) {
  RequestedName r;
  r.tls = true;
  if (bytes.size() < 5) return r;
  size_t recordLen = static_cast<uint8_t>(bytes[3]) << 8 | static_cast<uint8_t>(bytes[4]);
  if (bytes.size() < 5 + recordLen) return r;  // the ClientHello must fit one record
  Reader in{bytes.substr(5, recordLen)};
  r.state = State::kNone;
  if (in.get(1) != 1) return r;  // handshake type client_hello
  size_t helloLen = in.get(3);
  if (in.bad || helloLen > in.s.size() - in.pos) return r;
  in.skip(2 + 32);        // version, random
  in.skip(in.get(1));     // session id
  in.skip(in.get(2));     // cipher suites
  in.skip(in.get(1));     // compression methods
  size_t extEnd = in.get(2);
  extEnd += in.pos;
  while (!in.bad && in.pos + 4 <= extEnd) {
    uint32_t type = in.get(2), len = in.get(2);
    if (type != 0) {
      in.skip(len);
      continue;
    }
    Reader sni{in.s.substr(in.pos, std::min<size_t>(len, in.s.size() - in.pos))};
    size_t listEnd = sni.get(2);
    listEnd += sni.pos;
    while (!sni.bad && sni.pos + 3 <= listEnd) {
      uint32_t nameType = sni.get(1), nameLen = sni.get(2);
      if (sni.pos + nameLen > sni.s.size()) return r;
      if (nameType == 0) {
        return named(r, sni.s.substr(sni.pos, nameLen));
      }
      sni.skip(nameLen);
    }
    return r;
  }
  return r;
}

RequestedName httpHost(std::string_view bytes) {
  RequestedName r;
  size_t end = bytes.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (bytes.size() > 16384) r.state = State::kNone;
    return r;
  }
  r.state = State::kNone;
  std::string_view headers = bytes.substr(0, end + 2);
  size_t pos = headers.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < headers.size()) {
    size_t next = headers.find("\r\n", pos + 2);
    std::string_view line = headers.substr(pos + 2, next - pos - 2);
    if (line.size() > 5 && lower(line.substr(0, 5)) == "host:") {
      std::string_view value = line.substr(5);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
      if (!value.empty() && value.front() != '[') value = value.substr(0, value.find(':'));
      return named(r, value);
    }
    pos = next;
  }
  return r;
}

}  // namespace

RequestedName requestedName(std::string_view bytes) {
  if (bytes.empty()) return {};
  if (static_cast<uint8_t>(bytes[0]) == 0x16) return tlsSni(bytes);
  RequestedName r = httpHost(bytes);
  return r;
}

SshIdentification sshIdentification(std::string_view bytes) {
  constexpr std::string_view kPrefix = "SSH-2.0-";
  constexpr size_t kMaxLine = 255;
  const size_t head = std::min(bytes.size(), kPrefix.size());
  if (bytes.substr(0, head) != kPrefix.substr(0, head)) return SshIdentification::kNo;
  for (size_t i = 0; i < bytes.size() && i + 1 < kMaxLine; ++i) {  // CR LF included
    const char c = bytes[i];
    if (c == '\r')
      return i + 1 < bytes.size()
                 ? (bytes[i + 1] == '\n' && i >= kPrefix.size() + 1 ? SshIdentification::kYes : SshIdentification::kNo)
                 : SshIdentification::kIncomplete;
    if (c < 0x20 || c > 0x7e) return SshIdentification::kNo;
  }
  return bytes.size() >= kMaxLine ? SshIdentification::kNo : SshIdentification::kIncomplete;
}

}  // namespace airlock::egress
