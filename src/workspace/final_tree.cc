#include "workspace/final_tree.h"

#include <algorithm>
#include <set>

#include "workspace/relpath.h"

namespace airlock::workspace {
namespace {

std::string join(std::string_view dir, std::string_view name) {
  if (dir.empty()) return std::string(name);
  if (name.empty()) return std::string(dir);
  return std::string(dir) + "/" + std::string(name);
}

/// The components of `text`, last first (so the next one is back()).
void pushComponents(std::string_view text, std::vector<std::string>& stack) {
  std::vector<std::string> parts;
  for (size_t s = 0; s <= text.size();) {
    size_t e = text.find('/', s);
    if (e == std::string_view::npos) e = text.size();
    parts.emplace_back(text.substr(s, e - s));
    s = e + 1;
  }
  for (size_t i = parts.size(); i-- > 0;) stack.push_back(std::move(parts[i]));
}

TreeNode nodeOf(const ManifestEntry& e) { return TreeNode{true, e.type, e.target}; }

}  // namespace

FinalTree::FinalTree(const Manifest& baseline) {
  for (const auto& [path, e] : baseline.entries()) nodes_[path] = {nodeOf(e)};
}

void FinalTree::addVariant(const std::string& path, const Side& agent) {
  auto& v = nodes_[path];
  if (v.empty()) v.push_back(TreeNode{});  // not in the baseline: absent unless accepted
  TreeNode n{agent.exists, agent.type, agent.exists && agent.type == EntryType::Symlink ? agent.target : ""};
  for (const auto& have : v)
    if (have.exists == n.exists && (!n.exists || (have.type == n.type && have.target == n.target))) return;
  v.push_back(std::move(n));
}

const std::vector<TreeNode>& FinalTree::states(std::string_view rel) const {
  static const std::vector<TreeNode> absent{TreeNode{}};
  auto it = nodes_.find(rel);
  return it == nodes_.end() ? absent : it->second;
}

bool FinalTree::mayHaveEntriesBelow(std::string_view dir) const {
  std::string prefix = dir.empty() ? std::string() : std::string(dir) + "/";
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end() && it->first.starts_with(prefix); ++it) {
    if (it->first.size() == prefix.size()) continue;  // "" itself
    for (const TreeNode& n : it->second)
      if (n.exists) return true;
  }
  return false;
}

void FinalTree::setKnownElsewhere(std::function<bool(const std::string&)> known) { known_ = std::move(known); }

bool FinalTree::knownElsewhere(const std::string& path) const {
  if (!known_) return false;
  auto [it, fresh] = knownCache_.try_emplace(path, false);
  if (fresh) it->second = known_(path);
  return it->second;
}

void FinalTree::finish() {
  for (const auto& [path, v] : nodes_) {
    std::vector<Resolution> all;
    for (const auto& n : v) {
      if (!n.exists || n.type != EntryType::Symlink) continue;
      for (auto& r : resolveLink(path, n.target)) all.push_back(std::move(r));
    }
    if (all.empty()) continue;
    for (const auto& r : all) {
      if (r.kind == Resolution::Kind::Inside) linksTo_[r.path].push_back(Naming{path, r.via});
      for (size_t i = 0; i < r.exact.size(); ++i)  // names that link; passes the ones before it
        linksTo_[r.exact[i]].push_back(
            Naming{path, std::vector<std::string>(r.via.begin(), std::find(r.via.begin(), r.via.end(), r.exact[i]))});
    }
    linkOutcomes_[path] = std::move(all);
  }
}

std::vector<Resolution> FinalTree::resolve(std::string_view rel) const { return walk("", rel); }

std::vector<Resolution> FinalTree::resolveLink(std::string_view linkPath, std::string_view target) const {
  if (target.empty()) return {Resolution{Resolution::Kind::Unresolvable, std::string(linkPath), 0, {}, {}}};
  if (target.front() == '/') return {Resolution{Resolution::Kind::Outside, std::string(target), 0, {}, {}}};
  return walk(parentPath(linkPath), target);
}

std::vector<Resolution> FinalTree::walk(std::string_view dir, std::string_view rest) const {
  struct State {
    std::string prefix;             // resolved directory so far
    std::vector<std::string> todo;  // components left, next at back()
    int hops = 0;
    std::vector<std::string> via, exact;
  };
  std::vector<Resolution> out;
  auto emit = [&](Resolution::Kind k, std::string path, const State& s) {
    for (const auto& r : out)
      if (r.kind == k && r.path == path) return;
    out.push_back(Resolution{k, std::move(path), s.hops, s.via, s.exact});
  };
  std::vector<State> work;
  work.push_back(State{std::string(dir), {}, 0, {}, {}});
  pushComponents(rest, work.back().todo);
  spent_ += work.back().todo.size();
  size_t steps = 0;
  while (!work.empty()) {
    State s = std::move(work.back());
    work.pop_back();
    if (++steps > kMaxWork || ++spent_ > kMaxTotalWork) {
      emit(Resolution::Kind::Unresolvable, s.prefix, s);
      return out;
    }
    if (s.todo.empty()) {
      emit(Resolution::Kind::Inside, s.prefix, s);
      continue;
    }
    std::string c = std::move(s.todo.back());
    s.todo.pop_back();
    if (c.empty() || c == ".") {
      work.push_back(std::move(s));
      continue;
    }
    if (c == "..") {
      if (s.prefix.empty()) {
        emit(Resolution::Kind::Outside, "..", s);
        continue;
      }
      s.prefix = std::string(parentPath(s.prefix));
      work.push_back(std::move(s));
      continue;
    }
    std::string child = join(s.prefix, c);
    if (!nodes_.contains(child) && knownElsewhere(child)) {
      emit(Resolution::Kind::Unresolvable, child, s);  // kept out of the snapshot, or new on the host
      continue;
    }
    for (const TreeNode& n : states(child)) {
      spent_ += s.todo.size() + s.via.size();  // what a copy of the state costs
      if (!n.exists) {
        emit(Resolution::Kind::Missing, child, s);
      } else if (n.type == EntryType::Dir) {
        State next = s;
        next.prefix = child;
        work.push_back(std::move(next));
      } else if (n.type == EntryType::File) {
        emit(s.todo.empty() ? Resolution::Kind::Inside : Resolution::Kind::Missing, child, s);  // "file/x": ENOTDIR
      } else if (s.hops + 1 > kMaxHops || n.target.empty()) {
        emit(Resolution::Kind::Unresolvable, child, s);
      } else if (n.target.front() == '/') {
        State next = s;
        next.via.push_back(child);
        if (s.todo.empty() && s.exact.size() + 1 == next.via.size()) next.exact.push_back(child);
        ++next.hops;
        emit(Resolution::Kind::Outside, n.target, next);
      } else {
        State next = s;  // the target is relative to the link's directory, s.prefix
        next.via.push_back(child);
        if (s.todo.empty() && s.exact.size() + 1 == next.via.size()) next.exact.push_back(child);
        ++next.hops;
        pushComponents(n.target, next.todo);
        work.push_back(std::move(next));
      }
    }
  }
  return out;
}

bool FinalTree::aliases(std::string_view rel, std::vector<std::string>& out,
                        std::vector<std::vector<const std::string*>>* passed) const {
  // Breadth first; a symlink is used at most kMaxUses times per alias: a link
  // to its own ancestor (a loop) repeats the same components, and no
  // held-back pattern spans more than three components.
  constexpr size_t kMaxUses = 3;
  out.assign(1, std::string(rel));
  std::vector<std::vector<const std::string*>> used(1), via(1);
  std::set<std::string, std::less<>> seen{std::string(rel)};
  bool complete = true;
  for (size_t i = 0; i < out.size() && complete; ++i) {
    const std::string x = out[i];
    for (std::string_view a = x;; a = parentPath(a)) {
      if (auto it = linksTo_.find(a); it != linksTo_.end()) {
        for (const Naming& n : it->second) {
          if (static_cast<size_t>(std::count(used[i].begin(), used[i].end(), &n.link)) >= kMaxUses) continue;
          std::string y = a.empty() ? (x.empty() ? n.link : n.link + "/" + x) : n.link + x.substr(a.size());
          if (!seen.insert(y).second) continue;
          if (out.size() >= kMaxAliases) {
            complete = false;
            break;
          }
          out.push_back(std::move(y));
          used.push_back(used[i]);
          used.back().push_back(&n.link);
          via.push_back(via[i]);
          for (const auto& v : n.via) via.back().push_back(&v);
        }
      }
      if (a.empty() || !complete) break;
    }
  }
  if (passed) {
    passed->resize(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      (*passed)[i] = via[i];
      (*passed)[i].insert((*passed)[i].end(), used[i].begin(), used[i].end());
    }
  }
  return complete;
}

std::set<std::string, std::less<>> FinalTree::linksPassedBy(const std::function<bool(const std::string&)>& pred,
                                                             bool& complete) const {
  std::set<std::string, std::less<>> out;
  std::vector<std::string> names;
  std::vector<std::vector<const std::string*>> passed;
  size_t work = 0;
  for (const auto& [path, unused] : nodes_) {
    if (!aliases(path, names, &passed)) complete = false;
    if ((work += names.size()) > kMaxWork * 64) {
      complete = false;  // a loop names everything many times: stop, callers hold every link back
      break;
    }
    for (size_t i = 1; i < names.size(); ++i)
      if (pred(names[i]))
        for (const std::string* p : passed[i]) out.insert(*p);
  }
  return out;
}

}  // namespace airlock::workspace
