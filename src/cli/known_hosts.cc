#include "cli/known_hosts.h"

#include <fnmatch.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

#include "common/encoding.h"

namespace airlock::cli {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// Whether a hashed pattern ("|1|base64 salt|base64 hash") stands for `host`.
bool hashedMatches(std::string_view pattern, std::string_view host) {
  const size_t bar = pattern.find('|', 3);
  if (bar == std::string_view::npos) return false;
  auto salt = base64Decode(pattern.substr(3, bar - 3));
  auto hash = base64Decode(pattern.substr(bar + 1));
  if (!salt || !hash || salt->size() != 20 || hash->size() != 20) return false;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha1(), salt->data(), static_cast<int>(salt->size()), reinterpret_cast<const unsigned char*>(host.data()),
       host.size(), mac, &length);
  return length == hash->size() && std::equal(hash->begin(), hash->end(), reinterpret_cast<const char*>(mac));
}

/// Whether the comma-separated `patterns` field matches `host` (lower case).
bool patternsMatch(std::string_view patterns, const std::string& host) {
  bool matched = false;
  std::stringstream list{std::string(patterns)};
  std::string pattern;
  while (std::getline(list, pattern, ',')) {
    const bool negated = !pattern.empty() && pattern[0] == '!';
    if (negated) pattern.erase(0, 1);
    bool hit;
    if (pattern.starts_with("|1|"))
      hit = hashedMatches(pattern, host);
    else
      hit = fnmatch(lower(pattern).c_str(), host.c_str(), 0) == 0;  // "[h]:2222" names another port: no match
    if (hit && negated) return false;
    matched = matched || hit;
  }
  return matched;
}

}  // namespace

std::string knownHostsFor(std::string_view knownHosts, std::string_view host) {
  const std::string name = lower(host);
  std::string out;
  std::stringstream in{std::string(knownHosts)};
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::stringstream fields(line);
    std::string first, patterns;
    if (!(fields >> first) || first.starts_with("#")) continue;
    patterns = first;
    if (first.starts_with("@") && !(fields >> patterns)) continue;
    std::string keyType, key;
    if (!(fields >> keyType >> key)) continue;
    if (patternsMatch(patterns, name)) out += line + "\n";
  }
  return out;
}

std::vector<std::string> knownHostKeys(std::string_view knownHosts) {
  std::vector<std::string> keys;
  std::stringstream in{std::string(knownHosts)};
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream fields(line);
    std::string patterns, keyType, key;
    if (!(fields >> patterns >> keyType >> key) || patterns.starts_with("#") || patterns.starts_with("@")) continue;
    if (auto blob = base64Decode(key); blob && !blob->empty()) keys.push_back(std::move(*blob));
  }
  return keys;
}

}  // namespace airlock::cli
