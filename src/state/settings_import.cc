#include "state/settings_import.h"

#include <dirent.h>
#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/encoding.h"
#include "common/fd.h"
#include "common/visible_text.h"
#include "state/state_archive.h"
#include "workspace/ignore.h"
#include "workspace/private_key_scan.h"

namespace airlock::state {
namespace {

using json = nlohmann::json;

/// True when an environment variable of this name may hold a secret: a
/// secret-like word in it ("GITHUB_TOKEN", "ANTHROPIC_CUSTOM_HEADERS"), or a
/// secret-like part between underscores ("GH_PAT", "MYSQL_PWD").
bool nameMayHoldSecret(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (std::string_view word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE",
                                "PRIVATE", "HEADER", "SESSION"})
    if (upper.find(word) != std::string::npos) return true;
  size_t start = 0;
  while (start <= upper.size()) {
    size_t end = upper.find('_', start);
    if (end == std::string::npos) end = upper.size();
    std::string_view part(upper.data() + start, end - start);
    for (std::string_view word : {"PAT", "PWD", "PASS", "DSN", "CREDS"})
      if (part == word) return true;
    start = end + 1;
  }
  return false;
}

/// True when a variable's value looks like a credential: a URL with a
/// password, a bearer token, or a well-known token prefix.
bool valueMayHoldSecret(const std::string& value) {
  static const std::regex userinfo(R"(://[^/@\s:]*:[^/@\s]*@)");
  if (std::regex_search(value, userinfo)) return true;
  for (std::string_view marker : {"Bearer ", "bearer ", "Basic ", "sk-", "ghp_", "gho_", "ghs_", "github_pat_",
                                  "glpat-", "xoxb-", "xoxp-", "AKIA", "AIza", "x-api-key", "Authorization"})
    if (value.find(marker) != std::string::npos) return true;
  return false;
}

/// True when `name` is one of `patterns` (a name, or a prefix ending in '*').
bool matchesEnvPattern(const std::string& name, const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (p.ends_with('*') ? name.starts_with(std::string_view(p).substr(0, p.size() - 1)) : name == p) return true;
  }
  return false;
}

/// True when `path` is `dir` or lies below it.
bool within(const std::string& path, const std::string& dir) {
  return !dir.empty() && (path == dir || path.starts_with(dir + "/"));
}

/// Walks one settings path, filling `out` within `limits`.
class Importer {
 public:
  Importer(const std::string& home, const std::vector<std::string>& ownedEnv,
           const std::vector<std::string>& neverDirs, const SettingsLimits& limits, ImportedSettings& out)
      : home_(home), ownedEnv_(ownedEnv), limits_(limits), out_(out) {
    // Compared with real paths: the directories' own, links resolved.
    for (const auto& dir : neverDirs) {
      if (char* real = ::realpath(dir.c_str(), nullptr)) {
        neverDirs_.emplace_back(real);
        ::free(real);
      }
    }
  }

  void add(const agents::SettingsImport& setting) {
    const std::string full = home_ + "/" + setting.path;
    const std::string shown = "~/" + setting.path;
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0) {
      if (errno != ENOENT && errno != ENOTDIR) drop(shown, errnoText(errno));
      return;
    }
    const bool dir = S_ISDIR(st.st_mode);
    if (!dir && !S_ISREG(st.st_mode)) return drop(shown, "not a regular file or directory");
    if (!allowed(full, setting.path, dir, st, shown)) return;
    uint64_t files = 0;
    if (dir) {
      if (!setting.keys.empty()) return drop(shown, "a directory, where a JSON file was expected");
      if (!addParents(setting.path) || !room(shown)) return;
      out_.entries.push_back({setting.path, true, "", false});
      std::vector<std::pair<dev_t, ino_t>> ancestors = {{st.st_dev, st.st_ino}};
      walk(full, setting.path, shown, 0, files, ancestors);
      out_.imported.push_back(fmt::format("{} ({} file{})", shown, files, files == 1 ? "" : "s"));
      return;
    }
    auto content = readSmall(full, shown);
    if (!content) return;
    if (!setting.keys.empty()) {
      auto filtered = filterJson(*content, setting.keys, shown);
      if (!filtered) return;
      *content = std::move(*filtered);
    }
    if (!addParents(setting.path) || !room(shown, content->size())) return;
    out_.entries.push_back({setting.path, false, std::move(*content), (st.st_mode & 0111) != 0});
    out_.imported.push_back(shown);
  }

 private:
  void drop(const std::string& what, const std::string& why) { out_.dropped.push_back(visibleText(what + ": " + why)); }

  /// False (and reported) for what never goes in, whatever its settings
  /// path: a secret by its path under $HOME or by its real path (a link to
  /// ~/.ssh, to airlock's own directories, into /proc), git metadata, or
  /// another name (hard link) of a file.
  bool allowed(const std::string& full, const std::string& homeRel, bool isDir, const struct stat& st,
               const std::string& shown) {
    if (rules_.match(homeRel, isDir) == workspace::IgnoreVerdict::Secret) {
      drop(shown, "a secret file (kept out like the snapshot's secrets)");
      return false;
    }
    if (homeRel == ".git" || homeRel.ends_with("/.git")) {
      drop(shown, "git metadata (it may hold credentials)");
      return false;
    }
    if (!isDir && st.st_nlink > 1) {
      drop(shown, "a hard link (another name of a file that may be a secret)");
      return false;
    }
    char* resolved = ::realpath(full.c_str(), nullptr);
    if (!resolved) {
      drop(shown, errnoText(errno));
      return false;
    }
    const std::string real = resolved;
    ::free(resolved);
    for (const char* system : {"/proc", "/sys", "/dev", "/run"}) {
      if (within(real, system)) {
        drop(shown, "a link to " + real);
        return false;
      }
    }
    for (const auto& dir : neverDirs_) {
      if (within(real, dir)) {
        drop(shown, "a link into airlock's own files (" + real + ")");
        return false;
      }
    }
    if (rules_.match(std::string_view(real).substr(1), isDir) == workspace::IgnoreVerdict::Secret) {
      drop(shown, "a secret file by its real path (" + real + ")");
      return false;
    }
    return true;
  }

  /// True when one more entry of `bytes` fits; else reports `shown`.
  bool room(const std::string& shown, uint64_t bytes = 0) {
    if (out_.entries.size() + 1 > limits_.maxEntries) {
      drop(shown, fmt::format("past the limit of {} settings entries", limits_.maxEntries));
      return false;
    }
    if (bytes_ + bytes > limits_.maxBytes) {
      drop(shown, fmt::format("past the limit of {} of settings", formatBytes(limits_.maxBytes)));
      return false;
    }
    bytes_ += bytes;
    return true;
  }

  /// The directories above `path` (".claude" for ".claude/CLAUDE.md"), once each.
  bool addParents(const std::string& path) {
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      std::string parent = path.substr(0, slash);
      if (std::find(parents_.begin(), parents_.end(), parent) != parents_.end()) continue;
      if (!room("~/" + parent)) return false;
      parents_.push_back(parent);
      out_.entries.push_back({parent, true, "", false});
    }
    return true;
  }

  /// The regular file `full` (at most limits_.maxFileBytes, no private
  /// key in it), else reported.
  std::optional<std::string> readSmall(const std::string& full, const std::string& shown) {
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      drop(shown, st.st_mode ? "not a regular file" : errnoText(errno));
      return std::nullopt;
    }
    auto content = static_cast<uint64_t>(st.st_size) <= limits_.maxFileBytes
                       ? readFile(full, limits_.maxFileBytes)
                       : Result<std::string>(fail("larger"));
    if (!content) {
      drop(shown, fmt::format("unreadable, or larger than {}", formatBytes(limits_.maxFileBytes)));
      return std::nullopt;
    }
    if (workspace::hasPrivateKeyMarker(*content)) {
      drop(shown, "holds a private key");
      return std::nullopt;
    }
    return std::move(*content);
  }

  /// The JSON object `text` with only `keys` at the top, and its "env"
  /// object without the variables that may hold secrets or are airlock's.
  std::optional<std::string> filterJson(const std::string& text, const std::vector<std::string>& keys,
                                        const std::string& shown) {
    json doc = json::parse(text, nullptr, false, true);
    if (doc.is_discarded() || !doc.is_object()) {
      drop(shown, "not valid JSON, or not a JSON object");
      return std::nullopt;
    }
    json kept = json::object();
    for (auto& [key, value] : doc.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        drop(shown, fmt::format("{} (not on the agent's list of settings keys)", key));
        continue;
      }
      if (key == "env" && value.is_object()) {
        json env = json::object();
        for (auto& [name, v] : value.items()) {
          if (nameMayHoldSecret(name) || (v.is_string() && valueMayHoldSecret(v.get<std::string>())))
            drop(shown, fmt::format("env.{} (may hold a secret)", name));
          else if (matchesEnvPattern(name, ownedEnv_))
            drop(shown, fmt::format("env.{} (airlock sets or forwards it for the agent)", name));
          else
            env[name] = v;
        }
        kept[key] = std::move(env);
        continue;
      }
      kept[key] = value;
    }
    return kept.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }

  /// Adds the entries of the directory `full` (shown as `shown`, at `rel`
  /// below $HOME); `ancestors` are the directories walked into, by device
  /// and inode, so a symlink loop is seen once.
  void walk(const std::string& full, const std::string& rel, const std::string& shown, unsigned depth, uint64_t& files,
            std::vector<std::pair<dev_t, ino_t>>& ancestors) {
    if (depth >= limits_.maxDepth) return drop(shown, fmt::format("deeper than {} levels", limits_.maxDepth));
    std::vector<std::string> names;
    if (DIR* d = ::opendir(full.c_str())) {
      while (dirent* e = ::readdir(d)) {
        if (std::string_view(e->d_name) == "." || std::string_view(e->d_name) == "..") continue;
        if (names.size() >= limits_.maxEntries) break;  // past the cap anyway
        names.emplace_back(e->d_name);
      }
      ::closedir(d);
    } else {
      return drop(shown, errnoText(errno));
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string childFull = full + "/" + name, childRel = rel + "/" + name, childShown = shown + "/" + name;
      if (!isPlainName(name)) {
        drop(childShown, "a name that is not plain UTF-8");
        continue;
      }
      struct stat st {};
      if (::stat(childFull.c_str(), &st) != 0) {
        drop(childShown, errnoText(errno));
        continue;
      }
      const bool dir = S_ISDIR(st.st_mode);
      if (!dir && !S_ISREG(st.st_mode)) {
        drop(childShown, "not a regular file or directory");
        continue;
      }
      if (!allowed(childFull, childRel, dir, st, childShown)) continue;
      if (dir) {
        const std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
        if (std::find(ancestors.begin(), ancestors.end(), id) != ancestors.end()) {
          drop(childShown, "a symlink loop");
          continue;
        }
        if (!room(childShown)) return;
        out_.entries.push_back({childRel, true, "", false});
        ancestors.push_back(id);
        walk(childFull, childRel, childShown, depth + 1, files, ancestors);
        ancestors.pop_back();
        continue;
      }
      auto content = readSmall(childFull, childShown);
      if (!content) continue;
      if (!room(childShown, content->size())) return;
      out_.entries.push_back({childRel, false, std::move(*content), (st.st_mode & 0111) != 0});
      ++files;
    }
  }

  const std::string& home_;
  const std::vector<std::string>& ownedEnv_;
  std::vector<std::string> neverDirs_;
  const SettingsLimits& limits_;
  ImportedSettings& out_;
  workspace::IgnoreRules rules_;  ///< the built-in secret patterns only
  std::vector<std::string> parents_;
  uint64_t bytes_ = 0;
};

void mergeInto(json& base, const json& over) {
  for (auto& [key, value] : over.items()) {
    auto it = base.find(key);
    if (it != base.end() && it->is_object() && value.is_object())
      mergeInto(*it, value);
    else
      base[key] = value;
  }
}

}  // namespace

ImportedSettings importSettings(const std::string& home, const std::vector<agents::SettingsImport>& settings,
                                const std::vector<std::string>& ownedEnv, const std::vector<std::string>& neverDirs,
                                const SettingsLimits& limits) {
  ImportedSettings out;
  Importer importer(home, ownedEnv, neverDirs, limits, out);
  for (const auto& setting : settings) importer.add(setting);
  return out;
}

Result<std::string> packSettings(const std::vector<SettingsEntry>& entries, uint32_t uid) {
  std::unique_ptr<archive, decltype(&archive_write_free)> out(archive_write_new(), archive_write_free);
  archive_write_set_format_pax_restricted(out.get());
  // Names as the bytes they are (plain UTF-8, checked): no conversion from
  // the C locale's charset, which would refuse non-ASCII.
  archive_write_set_format_option(out.get(), "pax", "hdrcharset", "BINARY");
  archive_write_set_bytes_in_last_block(out.get(), 1);
  size_t total = 10240;
  for (const auto& e : entries) total += 2560 + 2 * e.path.size() + e.content.size();
  std::string buffer(total, '\0');
  size_t used = 0;
  if (archive_write_open_memory(out.get(), buffer.data(), buffer.size(), &used) != ARCHIVE_OK)
    return fail("cannot pack the settings: {}", archive_error_string(out.get()));
  const int64_t now = static_cast<int64_t>(::time(nullptr));
  for (const auto& e : entries) {
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(entry.get(), e.path.c_str());
    archive_entry_set_uid(entry.get(), uid);
    archive_entry_set_gid(entry.get(), uid);
    archive_entry_set_mtime(entry.get(), now, 0);
    archive_entry_set_filetype(entry.get(), e.directory ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(entry.get(), e.directory || e.executable ? 0755 : 0644);
    if (!e.directory) archive_entry_set_size(entry.get(), static_cast<la_int64_t>(e.content.size()));
    if (archive_write_header(out.get(), entry.get()) != ARCHIVE_OK ||
        (!e.content.empty() &&
         archive_write_data(out.get(), e.content.data(), e.content.size()) != static_cast<la_ssize_t>(e.content.size())))
      return fail("cannot pack the settings at {}: {}", visibleText(e.path), archive_error_string(out.get()));
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK)
    return fail("cannot pack the settings: {}", archive_error_string(out.get()));
  buffer.resize(used);
  return buffer;
}

Result<std::string> mergeJsonObjects(const std::string& base, const std::string& over) {
  json b = json::parse(base, nullptr, false, true), o = json::parse(over, nullptr, false, true);
  if (b.is_discarded() || !b.is_object()) return fail("the settings file is not a JSON object");
  if (o.is_discarded() || !o.is_object()) return fail("airlock's own settings file is not a JSON object");
  mergeInto(b, o);
  return b.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace airlock::state
