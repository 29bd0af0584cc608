#include "state/settings_import.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

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

#include "agents/agent_env.h"
#include "common/encoding.h"
#include "common/fd.h"
#include "common/paths.h"
#include "common/token_prefixes.h"
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
  for (std::string_view word : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "AUTH",
                                "COOKIE", "PRIVATE", "HEADER", "SESSION", "CONNECTION_STRING", "WEBHOOK", "SIGNING"})
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

/// True when a string looks like it holds a credential: a URL with user
/// information, a password or token parameter, an authorization header, or
/// a well-known token prefix (any case).
bool valueMayHoldSecret(const std::string& value) {
  std::string lower(value);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::regex userinfo(R"(://[^/\s@]+@)");
  if (std::regex_search(lower, userinfo)) return true;
  for (std::string_view marker : {"bearer ", "basic ", "authorization", "x-api-key",
                                  "password=", "passwd=", "token=", "secret=", "apikey=", "api_key=", "accountkey="})
    if (lower.find(marker) != std::string::npos) return true;
  for (std::string_view prefix : kTokenPrefixes) {
    std::string marker(prefix);
    for (char& c : marker) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.find(marker) != std::string::npos) return true;
  }
  return false;
}

/// True when a string anywhere in `value` looks like a credential.
bool anyStringMayHoldSecret(const nlohmann::json& value) {
  if (value.is_string()) return valueMayHoldSecret(value.get<std::string>());
  if (value.is_object() || value.is_array())
    for (const auto& item : value)
      if (anyStringMayHoldSecret(item)) return true;
  if (value.is_object())
    for (const auto& [key, item] : value.items())
      if (valueMayHoldSecret(key)) return true;
  return false;
}

constexpr size_t kMaxJsonDepth = 64;

/// Walks one settings path, filling `out` within `limits`. Every check is
/// made on the opened file (its type, link count and real path, read from
/// the descriptor), and the content is read from that same descriptor: a
/// path swapped between a check and the read changes nothing.
class Importer {
 public:
  Importer(const std::string& home, const std::vector<std::string>& ownedEnv, const std::vector<std::string>& neverDirs,
           const SettingsLimits& limits, ImportedSettings& out)
      : home_(home), ownedEnv_(ownedEnv), limits_(limits), out_(out) {
    // Compared with real paths: the directories' own, links resolved.
    for (const auto& dir : neverDirs) {
      if (char* real = ::realpath(dir.c_str(), nullptr)) {
        neverDirs_.emplace_back(real);
        ::free(real);
      }
    }
  }

  /// Ends the report: how many more were left out than listed.
  void finish() {
    if (droppedCount_ > out_.dropped.size())
      out_.dropped.push_back(fmt::format("and {} more left out", droppedCount_ - out_.dropped.size()));
  }

  void add(const agents::SettingsImport& setting) {
    const std::string full = home_ + "/" + setting.path;
    const std::string shown = "~/" + setting.path;
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0) {
      if (errno != ENOENT && errno != ENOTDIR) drop(shown, errnoText(errno));
      return;
    }
    auto opened = open(full, setting.path, shown);
    if (!opened) return;
    uint64_t files = 0;
    if (opened->dir) {
      if (!setting.keys.empty()) return drop(shown, "a directory, where a JSON file was expected");
      if (!addParents(setting.path) || !room(shown)) return;
      out_.entries.push_back({setting.path, true, "", false});
      walk(std::move(opened->fd), full, setting.path, shown, 0, files);
      out_.imported.push_back(fmt::format("{} ({} file{})", shown, files, files == 1 ? "" : "s"));
      return;
    }
    auto content = read(*opened, shown);
    if (!content) return;
    if (!setting.keys.empty()) {
      auto filtered = filterJson(*content, setting.keys, shown);
      if (!filtered) return;
      *content = std::move(*filtered);
    }
    if (!addParents(setting.path) || !room(shown, content->size())) return;
    out_.entries.push_back({setting.path, false, std::move(*content), opened->executable});
    out_.imported.push_back(shown);
  }

 private:
  /// An opened file or directory that passed every check.
  struct Opened {
    Fd fd;
    bool dir = false;
    bool executable = false;
    uint64_t size = 0;
  };

  void drop(const std::string& what, const std::string& why) {
    if (out_.dropped.size() < 20) out_.dropped.push_back(visibleText(what + ": " + why));
    ++droppedCount_;
  }

  /// Opens `full` (links followed, never blocking on a FIFO or a device),
  /// or says why not: what never goes in, whatever its settings path, is a
  /// secret by its path under $HOME or by its real path (a link to ~/.ssh,
  /// to airlock's own directories, into /proc), git metadata, another name
  /// (hard link) of a file, or anything but a regular file or directory.
  std::optional<Opened> open(const std::string& full, const std::string& homeRel, const std::string& shown) {
    if (++examined_ > limits_.maxEntries * 4) {
      if (examined_ == limits_.maxEntries * 4 + 1)
        drop(shown, fmt::format("past the limit of {} settings entries examined", limits_.maxEntries * 4));
      return std::nullopt;
    }
    Opened o;
    o.fd = Fd(::open(full.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    struct stat st {};
    if (!o.fd || ::fstat(o.fd.get(), &st) != 0) {
      drop(shown, errnoText(errno));
      return std::nullopt;
    }
    o.dir = S_ISDIR(st.st_mode);
    o.executable = (st.st_mode & 0111) != 0;
    o.size = static_cast<uint64_t>(st.st_size);
    if (!o.dir && !S_ISREG(st.st_mode)) {
      drop(shown, "not a regular file or directory");
      return std::nullopt;
    }
    if (rules_.match(homeRel, o.dir) == workspace::IgnoreVerdict::Secret) {
      drop(shown, "a secret file (kept out like the snapshot's secrets)");
      return std::nullopt;
    }
    if (homeRel == ".git" || homeRel.ends_with("/.git")) {
      drop(shown, "git metadata (it may hold credentials)");
      return std::nullopt;
    }
    if (!o.dir && st.st_nlink > 1) {
      drop(shown, "a hard link (another name of a file that may be a secret)");
      return std::nullopt;
    }
    char link[PATH_MAX + 1];
    const std::string self = "/proc/self/fd/" + std::to_string(o.fd.get());
    ssize_t n = ::readlink(self.c_str(), link, PATH_MAX);
    if (n <= 0 || link[0] != '/') {
      drop(shown, "its real path cannot be read");
      return std::nullopt;
    }
    const std::string real(link, static_cast<size_t>(n));
    for (const char* system : {"/proc", "/sys", "/dev", "/run"}) {
      if (isAtOrBelow(real, system)) {
        drop(shown, "a link to " + real);
        return std::nullopt;
      }
    }
    for (const auto& dir : neverDirs_) {
      if (isAtOrBelow(real, dir)) {
        drop(shown, "a link into airlock's own files (" + real + ")");
        return std::nullopt;
      }
    }
    if (rules_.match(std::string_view(real).substr(1), o.dir) == workspace::IgnoreVerdict::Secret) {
      drop(shown, "a secret file by its real path (" + real + ")");
      return std::nullopt;
    }
    if (o.dir && !walked_.insert({st.st_dev, st.st_ino}).second) {
      drop(shown, "a directory already copied under another name (a symlink loop?)");
      return std::nullopt;
    }
    return o;
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

  /// The opened regular file's content (at most limits_.maxFileBytes, all
  /// files read within 4 times limits_.maxBytes, no private key in it),
  /// else reported.
  std::optional<std::string> read(const Opened& o, const std::string& shown) {
    if (o.size > limits_.maxFileBytes) {
      drop(shown, fmt::format("larger than {}", formatBytes(limits_.maxFileBytes)));
      return std::nullopt;
    }
    if (read_ + o.size > limits_.maxBytes * 4) {
      drop(shown, fmt::format("past the limit of {} of settings read", formatBytes(limits_.maxBytes * 4)));
      return std::nullopt;
    }
    std::string content;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(o.fd.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        drop(shown, errnoText(errno));
        return std::nullopt;
      }
      if (n == 0) break;
      content.append(buf, static_cast<size_t>(n));
      read_ += static_cast<uint64_t>(n);
      if (content.size() > limits_.maxFileBytes) {
        drop(shown, fmt::format("larger than {}", formatBytes(limits_.maxFileBytes)));
        return std::nullopt;
      }
    }
    if (workspace::hasPrivateKeyMarker(content)) {
      drop(shown, "holds a private key");
      return std::nullopt;
    }
    return content;
  }

  /// The JSON object `text` with only `keys` at the top, none holding a
  /// string that looks like a credential, and its "env" object without the
  /// variables that may hold secrets or are airlock's.
  std::optional<std::string> filterJson(const std::string& text, const std::vector<std::string>& keys,
                                        const std::string& shown) {
    if (jsonDepth(text) > kMaxJsonDepth) {
      drop(shown, fmt::format("nested deeper than {} levels", kMaxJsonDepth));
      return std::nullopt;
    }
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
      if (key != "env") {
        if (anyStringMayHoldSecret(value)) {
          drop(shown, fmt::format("{} (holds what looks like a credential)", key));
          continue;
        }
        kept[key] = value;
        continue;
      }
      if (!value.is_object()) {
        drop(shown, "env (not an object of strings)");
        continue;
      }
      json env = json::object();
      for (auto& [name, v] : value.items()) {
        if (!v.is_string())
          drop(shown, fmt::format("env.{} (not a string)", name));
        else if (nameMayHoldSecret(name) || valueMayHoldSecret(v.get<std::string>()))
          drop(shown, fmt::format("env.{} (may hold a secret)", name));
        else if (agents::matchesEnvPattern(ownedEnv_, name))
          drop(shown, fmt::format("env.{} (airlock sets or forwards it for the agent)", name));
        else
          env[name] = v;
      }
      kept[key] = std::move(env);
    }
    return kept.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  }

  /// Adds the entries of the opened directory `dirFd` (at `full`, shown as
  /// `shown`, at `rel` below $HOME).
  void walk(Fd dirFd, const std::string& full, const std::string& rel, const std::string& shown, unsigned depth,
            uint64_t& files) {
    if (depth >= limits_.maxDepth) return drop(shown, fmt::format("deeper than {} levels", limits_.maxDepth));
    std::vector<std::string> names;
    DIR* d = ::fdopendir(dirFd.get());
    if (!d) return drop(shown, errnoText(errno));
    (void)dirFd.release();  // the DIR owns it now
    bool cut = false;
    while (dirent* e = ::readdir(d)) {
      if (std::string_view(e->d_name) == "." || std::string_view(e->d_name) == "..") continue;
      if (names.size() >= limits_.maxEntries) {
        cut = true;
        break;
      }
      names.emplace_back(e->d_name);
    }
    ::closedir(d);
    if (cut) drop(shown, fmt::format("more than {} entries: only the first are considered", limits_.maxEntries));
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const std::string childFull = full + "/" + name, childRel = rel + "/" + name, childShown = shown + "/" + name;
      if (!isPlainName(name)) {
        drop(childShown, "a name that is not plain UTF-8");
        continue;
      }
      auto child = open(childFull, childRel, childShown);
      if (!child) continue;
      if (child->dir) {
        if (!room(childShown)) return;
        out_.entries.push_back({childRel, true, "", false});
        walk(std::move(child->fd), childFull, childRel, childShown, depth + 1, files);
        continue;
      }
      auto content = read(*child, childShown);
      if (!content) continue;
      if (!room(childShown, content->size())) return;
      out_.entries.push_back({childRel, false, std::move(*content), child->executable});
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
  std::set<std::pair<dev_t, ino_t>> walked_;  ///< directories walked, each once
  uint64_t bytes_ = 0;                        ///< kept file contents
  uint64_t read_ = 0;                         ///< file contents read, kept or not
  uint64_t examined_ = 0;                     ///< entries opened, kept or not
  uint64_t droppedCount_ = 0;
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
  importer.finish();
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
        (!e.content.empty() && archive_write_data(out.get(), e.content.data(), e.content.size()) !=
                                   static_cast<la_ssize_t>(e.content.size())))
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
