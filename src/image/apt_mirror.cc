#include "image/apt_mirror.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "common/encoding.h"
#include "common/fd.h"
#include "common/paths.h"

namespace airlock::image {
namespace {

std::vector<std::string> words(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string stripSlash(std::string uri) {
  while (uri.size() > 1 && uri.back() == '/') uri.pop_back();
  return uri;
}

/// Collects the `deb` entries of one deb822 stanza (field name -> value).
void addStanza(const std::vector<std::pair<std::string, std::string>>& fields, std::vector<AptSource>& out) {
  std::vector<std::string> types, uris, suites;
  for (const auto& [name, value] : fields) {
    const std::string lower = asciiLower(name);
    if (lower == "types") types = words(value);
    if (lower == "uris") uris = words(value);
    if (lower == "suites") suites = words(value);
    if (lower == "enabled" && trim(value) == "no") return;
  }
  if (std::find(types.begin(), types.end(), "deb") == types.end()) return;
  for (const auto& uri : uris) {
    for (const auto& suite : suites) out.push_back({stripSlash(uri), suite});
  }
}

}  // namespace

std::vector<AptSource> parseSourcesList(std::string_view text) {
  std::vector<AptSource> out;
  for (auto raw : lines(text)) {
    std::string_view line = trim(raw.substr(0, raw.find('#')));
    auto w = words(line);
    if (w.empty() || w[0] != "deb") continue;
    size_t at = 1;
    if (at < w.size() && w[at].starts_with('[')) {
      while (at < w.size() && !w[at].ends_with(']')) ++at;
      ++at;
    }
    if (at + 1 < w.size()) out.push_back({stripSlash(w[at]), w[at + 1]});
  }
  return out;
}

std::vector<AptSource> parseDeb822Sources(std::string_view text) {
  std::vector<AptSource> out;
  std::vector<std::pair<std::string, std::string>> fields;
  for (auto raw : lines(text)) {
    if (raw.starts_with('#')) continue;
    if (trim(raw).empty()) {
      addStanza(fields, out);
      fields.clear();
      continue;
    }
    if ((raw.front() == ' ' || raw.front() == '\t') && !fields.empty()) {
      fields.back().second += " " + std::string(trim(raw));
      continue;
    }
    size_t colon = raw.find(':');
    if (colon == std::string_view::npos) continue;
    fields.emplace_back(std::string(trim(raw.substr(0, colon))), std::string(trim(raw.substr(colon + 1))));
  }
  addStanza(fields, out);
  return out;
}

std::vector<AptSource> hostAptSources() {
  std::vector<AptSource> out;
  auto append = [&out](std::vector<AptSource> more) { out.insert(out.end(), more.begin(), more.end()); };
  if (auto text = readFile("/etc/apt/sources.list", 1 << 20)) append(parseSourcesList(*text));
  const std::string dir = "/etc/apt/sources.list.d";
  for (const auto& name : listDir(dir).value_or(std::vector<std::string>{})) {
    bool list = name.ends_with(".list");
    if (!list && !name.ends_with(".sources")) continue;
    auto text = readFile(dir + "/" + name, 1 << 20);
    if (!text) continue;
    append(list ? parseSourcesList(*text) : parseDeb822Sources(*text));
  }
  return out;
}

std::vector<std::string> debianSourceLines(const std::vector<AptSource>& sources, std::string_view suite) {
  std::string main = "http://deb.debian.org/debian";
  std::string security = "http://deb.debian.org/debian-security";
  const std::string securitySuite = std::string(suite) + "-security";
  auto mainIt = std::find_if(sources.begin(), sources.end(), [&](const AptSource& s) { return s.suite == suite; });
  auto secIt =
      std::find_if(sources.begin(), sources.end(), [&](const AptSource& s) { return s.suite == securitySuite; });
  if (mainIt != sources.end()) main = mainIt->uri;
  if (secIt != sources.end()) security = secIt->uri;
  return {fmt::format("deb {} {} main", main, suite), fmt::format("deb {} {}-updates main", main, suite),
          fmt::format("deb {} {} main", security, securitySuite)};
}

}  // namespace airlock::image
