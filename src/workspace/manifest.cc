#include "workspace/manifest.h"

#include <charconv>

#include "common/fd.h"
#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

constexpr std::string_view kHeader = "airlock-manifest 1";

template <typename T>
bool parseNumber(std::string_view s, T& out, int base = 10) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

const char* entryTypeName(EntryType t) {
  switch (t) {
    case EntryType::File: return "file";
    case EntryType::Dir: return "directory";
    case EntryType::Symlink: return "symlink";
  }
  return "entry";
}

const ManifestEntry* Manifest::find(std::string_view path) const {
  auto it = entries_.find(path);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> Manifest::below(std::string_view dir) const {
  std::vector<std::string> out;
  std::string prefix = dir.empty() ? std::string() : std::string(dir) + "/";
  for (auto it = entries_.lower_bound(prefix); it != entries_.end() && it->first.starts_with(prefix); ++it)
    if (!it->first.empty()) out.push_back(it->first);
  return out;
}

std::string Manifest::serialize() const {
  std::string out(kHeader);
  out.push_back('\n');
  for (const auto& [path, e] : entries_) {
    std::string extra = e.type == EntryType::File      ? e.sha256
                        : e.type == EntryType::Symlink ? percentEncode(e.target)
                                                       : std::string("-");
    if (extra.empty()) extra.push_back('%');  // an empty symlink target encodes as a lone '%'
    out += fmt::format("{} {:o} {} {} {} {}\n", static_cast<char>(e.type), e.mode, e.size, e.mtimeNs, extra,
                       percentEncode(path));
  }
  return out;
}

Result<Manifest> Manifest::parse(std::string_view text, std::string_view origin) {
  Manifest m;
  size_t pos = 0, lineNo = 0;
  auto bad = [&](std::string_view why) {
    return fail("manifest {} line {} is invalid ({}); take a new snapshot", origin, lineNo, why);
  };
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineNo;
    if (lineNo == 1) {
      if (line != kHeader) return bad("missing header");
      continue;
    }
    if (line.empty()) continue;
    std::string_view f[6];
    size_t start = 0;
    for (int i = 0; i < 6; ++i) {
      size_t sp = i == 5 ? line.size() : line.find(' ', start);
      if (sp == std::string_view::npos) return bad("too few fields");
      f[i] = line.substr(start, sp - start);
      start = sp + 1;
    }
    ManifestEntry e;
    if (f[0] == "f") e.type = EntryType::File;
    else if (f[0] == "d") e.type = EntryType::Dir;
    else if (f[0] == "l") e.type = EntryType::Symlink;
    else return bad("unknown type");
    if (!parseNumber(f[1], e.mode, 8) || !parseNumber(f[2], e.size) || !parseNumber(f[3], e.mtimeNs))
      return bad("bad number");
    if (e.type == EntryType::File) {
      if (f[4].size() != 64) return bad("bad digest");
      e.sha256 = std::string(f[4]);
    } else if (e.type == EntryType::Symlink) {
      auto t = percentDecode(f[4] == "%" ? std::string_view{} : f[4]);
      if (!t) return bad("bad link target");
      e.target = std::move(*t);
    }
    auto p = percentDecode(f[5]);
    if (!p) return bad("bad path");
    auto norm = normalizeRelative(*p);
    if (!norm || norm->empty() || *norm != *p) return bad("path is not normalized");
    m.add(std::move(*p), std::move(e));
  }
  if (lineNo == 0) return bad("empty file");
  return m;
}

Result<> Manifest::save(const std::string& file) const { return writeFileAtomic(file, serialize(), 0600); }

Result<Manifest> Manifest::load(const std::string& file) {
  auto text = readFile(file, size_t{1} << 31);
  if (!text) return std::unexpected(text.error());
  return parse(*text, file);
}

}  // namespace airlock::workspace
