#include "image/oci/image_ref.h"

#include <algorithm>

#include "common/exit_codes.h"

namespace airlock::image::oci {
namespace {

bool isLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// One path component: [a-z0-9]+ separated by '.', '_', '__' or '-'s.
bool validComponent(std::string_view c) {
  if (c.empty() || !isLowerAlnum(c.front()) || !isLowerAlnum(c.back())) return false;
  return std::all_of(c.begin(), c.end(), [](char ch) { return isLowerAlnum(ch) || ch == '.' || ch == '_' || ch == '-'; });
}

bool validTag(std::string_view t) {
  if (t.empty() || t.size() > 128 || t.front() == '.' || t.front() == '-') return false;
  return std::all_of(t.begin(), t.end(), [](char c) {
    return isLowerAlnum(c) || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' || c == '-';
  });
}

bool validHost(std::string_view h) {
  if (h.empty() || h.size() > 255 || !(isLowerAlnum(h.front()) || (h.front() >= 'A' && h.front() <= 'Z') || h.front() == '['))
    return false;
  if (!h.starts_with('[') && std::count(h.begin(), h.end(), ':') > 1) return false;
  return std::all_of(h.begin(), h.end(), [](char c) {
    return isLowerAlnum(c) || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' || c == ':' || c == '[' || c == ']';
  });
}

}  // namespace

bool isValidDigest(std::string_view d) {
  constexpr std::string_view kPrefix = "sha256:";
  if (d.size() != kPrefix.size() + 64 || !d.starts_with(kPrefix)) return false;
  return std::all_of(d.begin() + kPrefix.size(), d.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool isLoopbackHost(std::string_view host) {
  std::string_view h = host;
  if (h.starts_with('[')) {
    auto close = h.find(']');
    h = close == std::string_view::npos ? h : h.substr(1, close - 1);
  } else if (auto colon = h.rfind(':'); colon != std::string_view::npos) {
    h = h.substr(0, colon);
  }
  return h == "localhost" || h == "::1" || h.starts_with("127.");
}

std::string ImageRef::str() const {
  std::string s = registry + "/" + repository;
  if (!tag.empty()) s += ":" + tag;
  if (!digest.empty()) s += "@" + digest;
  return s;
}

std::string ImageRef::name() const {
  return registry + "/" + repository + (tag.empty() ? "@" + digest : ":" + tag);
}

std::string ImageRef::endpoint() const { return registry == "docker.io" ? "registry-1.docker.io" : registry; }

Result<ImageRef> parseImageRef(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return failWith(exit_code::kUsage, "image reference '{}' is not valid: {}", text, why);
  };
  if (text.empty()) return bad("it is empty");
  if (text.size() > 1024) return bad("it is longer than 1024 characters");
  ImageRef ref;
  std::string_view rest = text;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    ref.digest = rest.substr(at + 1);
    rest = rest.substr(0, at);
    if (!isValidDigest(ref.digest)) return bad("the digest must be sha256: followed by 64 lowercase hex digits");
  }
  auto slash = rest.find('/');
  if (slash != std::string_view::npos) {
    std::string_view first = rest.substr(0, slash);
    if (first.find_first_of(".:") != std::string_view::npos || first == "localhost") {
      if (!validHost(first)) return bad("the registry host has invalid characters");
      ref.registry = first;
      rest = rest.substr(slash + 1);
    }
  }
  if (ref.registry.empty()) ref.registry = "docker.io";
  if (ref.registry == "index.docker.io" || ref.registry == "registry-1.docker.io") ref.registry = "docker.io";
  auto colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    ref.tag = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (!validTag(ref.tag)) return bad("the tag may only hold letters, digits, '_', '.' and '-' (at most 128)");
  } else if (ref.digest.empty()) {
    ref.tag = "latest";
  }
  if (rest.empty()) return bad("the repository name is missing");
  size_t pos = 0;
  while (pos <= rest.size()) {
    size_t next = rest.find('/', pos);
    std::string_view comp = rest.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
    if (!validComponent(comp))
      return bad(fmt::format("repository component '{}' must be lowercase letters and digits, separated by '.', '_' or '-'",
                             comp));
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  ref.repository = rest;
  if (ref.registry == "docker.io" && ref.repository.find('/') == std::string::npos)
    ref.repository = "library/" + ref.repository;
  return ref;
}

}  // namespace airlock::image::oci
