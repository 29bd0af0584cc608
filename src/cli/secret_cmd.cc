// `airlock secret set|ls|rm`: secrets kept on the host (issue 15, item 1).
// A value comes from standard input, never from the command line (argv is
// readable by every user in /proc); `ls` never prints a value.

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/expiry.h"
#include "cli/host_secrets.h"
#include "cli/report.h"
#include "cli/secret_input.h"
#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/token_prefixes.h"
#include "common/visible_text.h"
#include "secrets/agent_login.h"

namespace airlock::cli {
namespace {

int setSecret(const HostContext& host, const std::string& name, const std::string& expires) {
  // A rejected name is not repeated: it may be a token typed in the wrong place.
  if (startsLikeToken(name))
    return reportError(
        Error{"that name starts as a token does (sk-, ghp_, AKIA...): nothing is stored and it is not "
              "repeated; give a name, and the value on standard input",
              exit_code::kUsage});
  if (!secrets::isValidSecretName(name))
    return reportError(
        Error{"that is not a secret name: a letter, then letters, digits, '_', '.' or '-' (at most "
              "64); the value goes on standard input",
              exit_code::kUsage});
  if (name.starts_with(secrets::loginSecretName("")))
    return reportError(Error{fmt::format("{} is an agent's login, which `airlock login {}` stores (a token on standard "
                                         "input: airlock login {} --with-token)",
                                         name, name.substr(6), name.substr(6)),
                             exit_code::kUsage});
  std::optional<int64_t> expiresAt;
  if (!expires.empty()) {
    auto at = parseExpiry(expires, nowSeconds(host));
    if (!at) return reportError(at.error());
    expiresAt = *at;
  }
  auto value = readSecretValue("the value of " + name, host.terminal.stdinTty, "airlock secret set " + name);
  if (!value) return reportError(value.error());
  HostSecrets secrets(host, true);
  std::optional<secrets::SecretInfo> before;
  if (auto list = secrets.store().list())
    for (const auto& s : *list)
      if (s.name == name) before = s;
  std::string note;
  if (auto r = secrets.store().set(name, *value, "stdin", expiresAt, note); !r) return reportError(r.error());
  std::fprintf(stderr, "airlock: %s %s in the %s%s\n", before ? "replaced" : "stored", name.c_str(),
               secrets.where().c_str(),
               before && before->expiresAt && !expiresAt
                   ? fmt::format(" (it no longer expires {}: give --expires again to keep a date)",
                                 formatUtcTime(*before->expiresAt))
                         .c_str()
                   : "");
  if (!note.empty()) std::fprintf(stderr, "airlock: %s\n", note.c_str());
  return 0;
}

int listSecrets(const HostContext& host, bool json, bool quiet) {
  HostSecrets secrets(host, false);
  auto list = secrets.store().list();
  if (!list) return reportError(list.error());
  const int64_t now = nowSeconds(host);
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : *list) {
      nlohmann::json e = {{"name", s.name},        {"store", s.backend},
                          {"source", s.source},    {"updated_at", formatUtcTime(s.updatedAt)},
                          {"expires_at", nullptr}, {"last_used_at", nullptr}};
      if (s.expiresAt) e["expires_at"] = formatUtcTime(*s.expiresAt);
      if (s.lastUsedAt) e["last_used_at"] = formatUtcTime(*s.lastUsedAt);
      out.push_back(std::move(e));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (quiet) {
    for (const auto& s : *list) std::printf("%s\n", s.name.c_str());
    return 0;
  }
  // Columns as wide as their widest cell (names and sources vary), two spaces apart.
  std::vector<std::array<std::string, 5>> rows{{"NAME", "STORE", "SOURCE", "EXPIRES", "LAST USED"}};
  for (const auto& s : *list) {
    std::string expiry = !s.expiresAt          ? "never"
                         : *s.expiresAt <= now ? "expired " + relativeTime(s.expiresAt, now)
                                               : relativeTime(s.expiresAt, now);
    rows.push_back({s.name, visibleText(s.backend), visibleText(s.source), expiry, relativeTime(s.lastUsedAt, now)});
  }
  std::array<size_t, 5> width{};
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows)
    std::printf("%-*s  %-*s  %-*s  %-*s  %s\n", static_cast<int>(width[0]), row[0].c_str(), static_cast<int>(width[1]),
                row[1].c_str(), static_cast<int>(width[2]), row[2].c_str(), static_cast<int>(width[3]), row[3].c_str(),
                row[4].c_str());
  return 0;
}

int removeSecrets(const HostContext& host, const std::vector<std::string>& names) {
  HostSecrets secrets(host, true);
  int code = 0;
  for (const auto& name : names) {
    if (name.starts_with(secrets::loginSecretName("")) && name.size() > secrets::loginSecretName("").size()) {
      // Under the login's lock, where a run's refresh cannot bring it back.
      code = reportError(Error{fmt::format("{} is an agent's login: airlock logout {}", visibleText(name),
                                           visibleText(name.substr(secrets::loginSecretName("").size()))),
                               exit_code::kUsage});
      continue;
    }
    std::string note;
    auto removed = secrets.store().remove(name, note);
    if (!removed) {
      code = reportError(removed.error());
    } else if (!*removed) {
      code = reportError(Error{secrets::isValidSecretName(name) && !startsLikeToken(name)
                                   ? fmt::format("no secret named {} (see `airlock secret ls`)", name)
                                   : "that is not a secret name (see `airlock secret ls`)",
                               exit_code::kUsage});
    } else {
      std::printf("%s\n", name.c_str());
      if (!note.empty()) std::fprintf(stderr, "airlock: %s\n", note.c_str());
    }
  }
  return code;
}

}  // namespace

void addSecretCommand(CLI::App& app, int& exitCode, const HostContext& host,
                      const std::vector<std::string>& afterDoubleDash) {
  auto* cmd = app.add_subcommand(
      "secret", "The secret store on this host, where `airlock login` keeps the agents' logins (login.AGENT)");
  cmd->require_subcommand(1);
  cmd->footer(
      "Values go to the Secret Service (gnome-keyring, KWallet) when a session bus has one with an unlocked "
      "default keyring, else to files (0600) under $XDG_DATA_HOME/airlock/secrets (always with "
      "AIRLOCK_SECRET_STORE=file); `airlock doctor` says which. What airlock knows about each (store, source, "
      "expiry, last use; never the value) is in $XDG_DATA_HOME/airlock/secrets.json. Logins are stored with "
      "`airlock login AGENT`; a value you set yourself is kept here, but no run reads one by name yet.\n\n"
      "Examples:\n  airlock secret ls                      # the logins, and what else is kept\n"
      "  printenv GITHUB_TOKEN | airlock secret set github-token --expires 2027-01-31\n"
      "  airlock secret rm github-token");

  auto name = std::make_shared<std::string>();
  auto expires = std::make_shared<std::string>();
  auto* set = cmd->add_subcommand("set", "Store a secret; the value is read from standard input, never from argv");
  set->footer(
      "On a terminal: one line, not shown (backspace and Ctrl-U edit, Ctrl-C aborts; pipe a multi-line value). "
      "From a pipe or file: every byte, without the final newline of a one-line value (a PEM key keeps its "
      "own). At most 64 KiB. Setting a name again replaces its value.\n\n"
      "Examples:\n"
      "  airlock secret set github-token                       # type or paste it (not shown)\n"
      "  printenv GITHUB_TOKEN | airlock secret set github-token --expires 2027-01-31\n"
      "  airlock secret set deploy-key < ~/.ssh/deploy_key     # a multi-line value, byte for byte");
  set->allow_extras();
  set->add_option("NAME", *name, "Secret name: a letter, then letters, digits, '_', '.' or '-'")->required();
  set->add_option("--expires", *expires, "When it stops working (UTC: 2026-12-31 or 2026-12-31T08:00:00Z)");
  // A value given as an argument is refused without being repeated.
  auto extra = std::make_shared<std::vector<std::string>>();
  set->add_option("VALUE", *extra)->group("");
  set->callback([set, name, expires, extra, &exitCode, &host, &afterDoubleDash] {
    if (!extra->empty() || !set->remaining().empty() || !afterDoubleDash.empty()) {
      exitCode =
          reportError(Error{"airlock secret set takes only NAME and --expires: the value is read from "
                            "standard input, never from the command line (every user can read argv): "
                            "printenv TOKEN | airlock secret set NAME",
                            exit_code::kUsage});
      return;
    }
    exitCode = setSecret(host, *name, *expires);
  });

  auto json = std::make_shared<bool>(false);
  auto quiet = std::make_shared<bool>(false);
  auto* ls = cmd->add_subcommand("ls", "List secrets: name, store, source, expiry, last use (never values)");
  ls->alias("list");
  ls->add_flag("--json", *json, "Machine-readable output");
  ls->add_flag("-q,--quiet", *quiet, "Names only");
  ls->callback([json, quiet, &exitCode, &host] { exitCode = listSecrets(host, *json, *quiet); });

  auto names = std::make_shared<std::vector<std::string>>();
  auto* rm = cmd->add_subcommand("rm", "Remove secrets (value and entry)");
  rm->alias("remove");
  rm->add_option("NAME", *names, "Secret names")->required();
  rm->callback([names, &exitCode, &host] { exitCode = removeSecrets(host, *names); });
}

}  // namespace airlock::cli
