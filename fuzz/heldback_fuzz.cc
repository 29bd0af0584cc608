// libFuzzer target for the held-back judgement on resolved paths: the input
// builds a small baseline tree and an agent tree (directories, files,
// symlinks over a tiny alphabet of names, so hostile shapes recur), the
// items are their difference, and classifyItems() must finish within its
// bounds without crashing. A brute-force oracle then picks, per item, the
// baseline or the agent state (as a reviewer might), resolves every path of
// up to three components in that concrete tree with its own realpath-style
// walk, and aborts when an item reached under a held-back name, a symlink
// item passed on the way to an existing held-back path, a symlink item that
// resolves outside or cannot be resolved, or a .git path is not held back.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workspace/held_back.h"
#include "workspace/relpath.h"
#include "workspace/review.h"

namespace ws = airlock::workspace;

namespace {

constexpr const char* kNames[] = {"a", "b", ".git", ".claude", ".github", "workflows", "settings.json", ".envrc", "x"};
constexpr size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);

struct Input {
  const uint8_t* p;
  size_t n;
  uint8_t next() {
    if (!n) return 0;
    --n;
    return *p++;
  }
};

struct Node {
  ws::EntryType type = ws::EntryType::File;
  std::string target;
};
using Tree = std::map<std::string, Node>;

/// Adds `path` as `node` when every ancestor is (or can become) a directory.
void put(Tree& t, const std::string& path, const Node& node) {
  for (std::string_view anc = ws::parentPath(path); !anc.empty(); anc = ws::parentPath(anc)) {
    auto it = t.find(std::string(anc));
    if (it != t.end() && it->second.type != ws::EntryType::Dir) return;
  }
  for (std::string_view anc = ws::parentPath(path); !anc.empty(); anc = ws::parentPath(anc))
    t.emplace(std::string(anc), Node{ws::EntryType::Dir, ""});
  auto it = t.find(path);
  if (it != t.end() && it->second.type == ws::EntryType::Dir && node.type != ws::EntryType::Dir) {
    // replacing a directory drops what was below it
    std::string lo = path + "/";
    for (auto b = t.lower_bound(lo); b != t.end() && b->first.starts_with(lo);) b = t.erase(b);
  }
  t[path] = node;
}

std::string randomPath(Input& in) {
  size_t depth = 1 + in.next() % 3;
  std::string p;
  for (size_t i = 0; i < depth; ++i) p += (i ? "/" : "") + std::string(kNames[in.next() % kNameCount]);
  return p;
}

std::string randomTarget(Input& in) {
  uint8_t b = in.next();
  std::string t = (b & 0x80) ? "/" : "";
  size_t len = 1 + (b & 3);
  for (size_t i = 0; i < len; ++i) {
    uint8_t c = in.next() % (kNameCount + 2);
    if (i) t += "/";
    t += c == kNameCount ? ".." : c == kNameCount + 1 ? "." : kNames[c];
  }
  return t;
}

Node randomNode(Input& in) {
  uint8_t k = in.next() % 3;
  if (k == 0) return {ws::EntryType::Dir, ""};
  if (k == 1) return {ws::EntryType::File, ""};
  return {ws::EntryType::Symlink, randomTarget(in)};
}

// ---- the oracle: one concrete tree, a plain realpath walk ----

struct Walk {
  enum Kind { Inside, Missing, Outside, Unresolvable } kind = Inside;
  std::string path;
  std::vector<std::string> via;
};

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  for (size_t a = 0; a <= s.size();) {
    size_t e = s.find('/', a);
    if (e == std::string_view::npos) e = s.size();
    out.emplace_back(s.substr(a, e - a));
    a = e + 1;
  }
  return out;
}

/// Resolves `comps` from directory `dir` in `t`, following every symlink.
void resolveIn(const Tree& t, std::string dir, std::vector<std::string> comps, int& hops, Walk& w) {
  for (size_t i = 0; i < comps.size(); ++i) {
    const std::string& c = comps[i];
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (dir.empty()) {
        w.kind = Walk::Outside;
        return;
      }
      dir = std::string(ws::parentPath(dir));
      continue;
    }
    std::string child = dir.empty() ? c : dir + "/" + c;
    auto it = t.find(child);
    if (it == t.end()) {
      w.kind = Walk::Missing;
      w.path = child;
      return;
    }
    if (it->second.type == ws::EntryType::Dir) {
      dir = child;
      continue;
    }
    if (it->second.type == ws::EntryType::File) {
      w.kind = i + 1 == comps.size() ? Walk::Inside : Walk::Missing;
      w.path = child;
      return;
    }
    if (++hops > 40) {
      w.kind = Walk::Unresolvable;
      return;
    }
    w.via.push_back(child);
    const std::string& target = it->second.target;
    if (target.empty() || target[0] == '/') {
      w.kind = Walk::Outside;
      return;
    }
    std::vector<std::string> rest = split(target);
    rest.insert(rest.end(), comps.begin() + static_cast<long>(i) + 1, comps.end());
    return resolveIn(t, dir, std::move(rest), hops, w);
  }
  w.kind = Walk::Inside;
  w.path = dir;
}

Walk resolve(const Tree& t, std::string_view dir, std::string_view rel) {
  Walk w;
  int hops = 0;
  resolveIn(t, std::string(dir), split(rel), hops, w);
  return w;
}

/// Every path of up to three names from the alphabet that is held back (computed once).
const std::vector<std::string>& heldBackNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out, level{""};
    for (size_t depth = 0; depth < 3; ++depth) {
      std::vector<std::string> next;
      for (const auto& q : level)
        for (const char* n : kNames) next.push_back(q.empty() ? n : q + "/" + n);
      for (const auto& q : next)
        if (ws::isHeldBackPath(q)) out.push_back(q);
      level = std::move(next);
    }
    return out;
  }();
  return names;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  Tree base, agent;
  size_t nBase = in.next() % 12, nAgent = in.next() % 12;
  for (size_t i = 0; i < nBase; ++i) {
    std::string p = randomPath(in);
    put(base, p, randomNode(in));
  }
  agent = base;
  for (size_t i = 0; i < nAgent; ++i) {
    std::string p = randomPath(in);
    if (in.next() % 4 == 0) {  // a deletion (whiteout)
      std::string lo = p + "/";
      for (auto b = agent.lower_bound(lo); b != agent.end() && b->first.starts_with(lo);) b = agent.erase(b);
      agent.erase(p);
    } else {
      put(agent, p, randomNode(in));
    }
  }
  ws::Manifest baseline;
  for (const auto& [p, n] : base) {
    ws::ManifestEntry e;
    e.type = n.type;
    e.mode = n.type == ws::EntryType::Dir ? 0755 : 0644;
    e.target = n.target;
    baseline.add(p, e);
  }
  auto side = [](const Tree& t, const std::string& p) {
    ws::Side s;
    auto it = t.find(p);
    if (it == t.end()) return s;
    s.exists = true;
    s.type = it->second.type;
    s.mode = it->second.type == ws::EntryType::Dir ? 0755 : 0644;
    s.target = it->second.target;
    return s;
  };
  std::vector<ws::DiffItem> items;
  std::map<std::string, bool> all;
  for (const auto& [p, n] : base) all[p] = true;
  for (const auto& [p, n] : agent) all[p] = true;
  for (const auto& [p, unused] : all) {
    ws::DiffItem it;
    it.path = p;
    it.base = side(base, p);
    it.agent = side(agent, p);
    if (it.base.exists == it.agent.exists && (!it.base.exists || (it.base.type == it.agent.type &&
                                                                   it.base.target == it.agent.target)))
      continue;
    it.kind = ws::ChangeKind::Modified;
    items.push_back(std::move(it));
  }
  ws::classifyItems(items, baseline);

  // The oracle, for one reviewer's choice per item.
  Tree concrete = base;
  std::map<std::string, const ws::DiffItem*> chosen;  // items whose agent state is in `concrete`
  for (const auto& it : items) {
    // A flush never writes git metadata, whatever the reviewer says.
    if (!(in.next() & 1) || it.gitMetadata || ws::isGitMetadataPath(it.path)) continue;
    chosen[it.path] = &it;
    auto a = agent.find(it.path);
    if (a == agent.end()) concrete.erase(it.path);
    else concrete[it.path] = a->second;
  }
  for (const auto& it : items)
    if (ws::isGitMetadataPath(it.path) && !(it.gitMetadata && it.heldBack)) std::abort();
  for (const auto& [p, it] : chosen) {
    if (!it->agent.exists || it->agent.type != ws::EntryType::Symlink) continue;
    Walk w = resolve(concrete, ws::parentPath(p), it->agent.target);
    if ((w.kind == Walk::Outside || w.kind == Walk::Unresolvable) && !it->heldBack) std::abort();
  }
  auto mustHold = [&](const std::string& path) {
    auto c = chosen.find(path);
    if (c != chosen.end() && !c->second->heldBack) std::abort();
  };
  for (const auto& q : heldBackNames()) {
    // The entry q names itself (its last component not followed)...
    Walk parent = resolve(concrete, "", ws::parentPath(q));
    if (parent.kind == Walk::Inside) {
      std::string self = parent.path.empty() ? std::string(ws::baseName(q))
                                             : parent.path + "/" + std::string(ws::baseName(q));
      if (concrete.count(self)) {
        mustHold(self);
        for (const auto& v : parent.via) mustHold(v);
      }
    }
    // ...and what it reaches, through which links.
    Walk w = resolve(concrete, "", q);
    if (w.kind == Walk::Inside && !w.path.empty()) {
      mustHold(w.path);
      for (const auto& v : w.via) mustHold(v);
    }
  }
  return 0;
}
