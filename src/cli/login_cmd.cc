// `airlock login AGENT` and `airlock logout AGENT` (issue 15, item 2): an
// agent's account login kept on this host, in the secret store, as the
// secret "login.AGENT". `airlock run` then brokers it (cli/run_login.h):
// the VM only ever gets placeholders.
//
//   --from-host      the login the agent made on this machine (its own
//                    credential file under $HOME, e.g. ~/.claude/.credentials.json)
//   --from-env NAME  a long-lived token in the variable NAME
//   (neither)        on a terminal, the agent's own login in a VM (its spec's
//                    login_command: `codex login --device-auth`) when it has
//                    one; else a long-lived token on standard input
//                    (`claude setup-token`'s)

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "agents/agent_env.h"
#include "cli/agents.h"
#include "cli/commands.h"
#include "cli/expiry.h"
#include "cli/host_secrets.h"
#include "cli/login_vm.h"
#include "cli/report.h"
#include "cli/run_login.h"
#include "cli/secret_input.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/token_prefixes.h"
#include "common/visible_text.h"
#include "secrets/agent_login.h"
#include "secrets/secret_store.h"

namespace airlock::cli {
namespace {

/// The largest account cache file read (Claude's .claude.json also holds
/// per-project history).
constexpr size_t kMaxAccountFileBytes = 16u << 20;

struct LoginArgs {
  std::string agent;
  bool fromHost = false;
  std::string fromEnv;
  bool withToken = false;  ///< a long-lived token from stdin even on a terminal
  std::string expires;     ///< --expires: when a long-lived token stops working ("" unknown)
};

Result<agents::AgentSpec> loginSpec(const HostContext& host, const std::string& name) {
  if (startsLikeToken(name))
    return failWith(exit_code::kUsage,
                    "that is not an agent name (not repeated: it starts as a token does); a token "
                    "goes on standard input: printenv TOKEN | airlock login AGENT");
  auto registry = knownAgents(host);
  if (!registry) return std::unexpected(registry.error());
  auto spec = registry->find(name);
  if (!spec) return std::unexpected(spec.error());
  if (spec->login.format.empty())
    return failWith(exit_code::kUsage,
                    "{} has no account login airlock can keep; give it an API key with --env "
                    "(see `airlock agents show {}`)",
                    name, name);
  return *spec;
}

/// The agent's own credential file under $HOME: a regular file of the
/// user's, at most `maxBytes`.
Result<std::string> readCredentialFile(const std::string& path, size_t maxBytes = secrets::kMaxCredentialFileBytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd)
    return failWith(exit_code::kUsage, "cannot read {}: {}; log in with the agent on this machine first", path,
                    errnoText(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(maxBytes))
    return failWith(exit_code::kUsage, "{} is not what {} writes (a regular file of at most {} KiB)", path, "the agent",
                    maxBytes / 1024);
  std::string text(static_cast<size_t>(st.st_size), '\0');
  if (readFull(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return fail("cannot read {}: {}", path, errnoText(errno));
  return text;
}

/// Where the agent keeps `relative` (a path under $HOME in its spec) on
/// this host: under $XDG_DATA_HOME or $XDG_CONFIG_HOME when it is in their
/// default place (.local/share/, .config/) and they are set, as the agent
/// itself resolves it (OpenCode's auth.json).
std::string hostAgentFile(const HostContext& host, const std::string& relative) {
  for (auto [prefix, variable] :
       {std::pair{".local/share/", "XDG_DATA_HOME"}, std::pair{".config/", "XDG_CONFIG_HOME"}})
    if (relative.starts_with(prefix) && !host.getEnv(variable).empty())
      return host.getEnv(variable) + "/" + relative.substr(std::string_view(prefix).size());
  return host.getEnv("HOME") + "/" + relative;
}

int login(const HostContext& host, const LoginArgs& args) {
  auto spec = loginSpec(host, args.agent);
  if (!spec) return reportError(spec.error());
  const agents::LoginSpec& how = spec->login;
  Result<secrets::AgentLogin> login = std::unexpected(Error{});
  std::string source;
  std::optional<int64_t> expiresAt;
  if (!args.expires.empty()) {
    const bool loginInVm =
        !how.loginCommand.empty() && host.terminal.stdinTty && !args.withToken && args.fromEnv.empty();
    if (args.fromHost || loginInVm)
      return reportError(
          Error{"--expires dates a long-lived token (--with-token or --from-env); an account login is "
                "refreshed and has no fixed end",
                exit_code::kUsage});
    auto at = parseExpiry(args.expires, nowSeconds(host));
    if (!at) return reportError(at.error());
    expiresAt = *at;
  }
  if (args.fromHost && how.file.empty()) {
    return reportError(Error{fmt::format("a {} login is a token with no file on this host: pipe it in (airlock login "
                                         "{} --with-token) or name its variable with --from-env",
                                         args.agent, args.agent),
                             exit_code::kUsage});
  } else if (args.fromHost) {
    const std::string path = hostAgentFile(host, how.file);
    auto text = readCredentialFile(path);
    if (!text && !how.loginCommand.empty())
      return reportError(Error{text.error().message + fmt::format(", or sign in inside a VM: airlock login {}",
                                                                  args.agent),
                               text.error().code});
    if (!text) return reportError(text.error());
    login = secrets::loginFromCredentialFile(how.format, *text);
    source = "host file";
    // Who is logged in, so the agent need not ask its API at start (best
    // effort: without it the agent asks, and the VM cannot reach the API).
    if (login && !how.accountFile.empty())
      if (auto cache = readCredentialFile(hostAgentFile(host, how.accountFile), kMaxAccountFileBytes))
        login->accountJson = secrets::accountFromFile(*cache, how.accountKey);
  } else if (!args.fromEnv.empty()) {
    // Neither message repeats what was given: it may be the token itself.
    if (!agents::isEnvName(args.fromEnv))
      return reportError(
          Error{"--from-env takes the name of a variable holding the token (e.g. "
                "CLAUDE_CODE_OAUTH_TOKEN), not the token: what was given is not a variable name, "
                "and is not repeated",
                exit_code::kUsage});
    if (host.env.find(args.fromEnv) == host.env.end())
      return reportError(
          Error{"the variable named by --from-env is not set here (export it first; its name is not "
                "repeated in case it was the token)",
                exit_code::kUsage});
    login = secrets::loginFromToken(how.format, host.getEnv(args.fromEnv));
    source = "env " + args.fromEnv;
  } else if (!how.loginCommand.empty() && host.terminal.stdinTty && !args.withToken) {
    // The agent's own login, in a VM, on this terminal.
    login = loginInVm(host, *spec, false);
    source = "login in a VM";
  } else {
    const std::string what = how.tokenEnv.empty() ? fmt::format("the {} token", args.agent)
                                                  : fmt::format("the {} token, as in {}", args.agent, how.tokenEnv);
    auto value = readSecretValue(what, host.terminal.stdinTty, "airlock login " + args.agent);
    if (!value) return reportError(value.error());
    login = secrets::loginFromToken(how.format, *value);
    source = "stdin";
  }
  if (!login) return reportError(login.error());
  // A token that carries its own end (a JWT's exp) is dated by it; one
  // already past it is refused, not stored.
  if (!expiresAt && login->kind == secrets::AgentLogin::Kind::kToken && login->expiresAtMs)
    expiresAt = *login->expiresAtMs / 1000;
  if (expiresAt && *expiresAt <= nowSeconds(host))
    return reportError(Error{fmt::format("that {} login expired {} and cannot be refreshed (no refresh token); log "
                                         "in again: airlock login {}",
                                         args.agent, relativeTime(expiresAt, nowSeconds(host)), args.agent),
                             exit_code::kUsage});
  HostSecrets secrets(host, true);
  std::string note;
  // Under the login's lock: a session's refresh in flight neither loses
  // this login nor is lost to it.
  auto lock = lockLogin(host, args.agent);
  if (!lock) return reportError(lock.error());
  if (auto r = secrets.store().set(secrets::loginSecretName(args.agent), secrets::serializeLogin(*login), source,
                                   expiresAt, note);
      !r)
    return reportError(r.error());
  std::string kind = secrets::describeLogin(*login);
  if (const std::string who = secrets::loginAccountName(*login); !who.empty()) kind += " of " + visibleText(who);
  if (how.deliveredInVariable())
    std::fprintf(stderr,
                 "airlock: %s login stored in the %s: %s; %s cannot be brokered: `airlock run %s` gives it "
                 "to the agent as $%s (it enters the VM)\n",
                 args.agent.c_str(), secrets.where().c_str(), kind.c_str(), args.agent.c_str(), args.agent.c_str(),
                 how.tokenEnv.c_str());
  else if (how.entersVm)
    std::fprintf(stderr,
                 "airlock: %s login stored in the %s: %s; %s cannot be brokered: `airlock run %s` puts it "
                 "in the VM on a tmpfs and keeps the refreshed one when the agent exits\n",
                 args.agent.c_str(), secrets.where().c_str(), kind.c_str(), args.agent.c_str(), args.agent.c_str());
  else
    std::fprintf(stderr,
                 "airlock: %s login stored in the %s: %s; `airlock run %s` brokers it, the VM gets a "
                 "placeholder\n",
                 args.agent.c_str(), secrets.where().c_str(), kind.c_str(), args.agent.c_str());
  if (args.fromHost && login->kind == secrets::AgentLogin::Kind::kSubscription &&
      secrets::rotatesRefreshToken(login->format))
    std::fprintf(stderr,
                 "airlock: the login is now shared with `%s` on this machine; when one side refreshes it, "
                 "the other may have to log in again\n",
                 spec->command.empty() ? args.agent.c_str() : spec->command[0].c_str());
  if (!note.empty()) std::fprintf(stderr, "airlock: %s\n", note.c_str());
  return 0;
}

int logout(const HostContext& host, const std::string& agent) {
  if (startsLikeToken(agent))
    return reportError(
        Error{"that is not an agent name (not repeated: it starts as a token does; see `airlock agents`)",
              exit_code::kUsage});
  if (!secrets::isValidSecretName(secrets::loginSecretName(agent)))
    return reportError(
        Error{fmt::format("'{}' is not an agent name (see `airlock agents`)", visibleText(agent)), exit_code::kUsage});
  HostSecrets secrets(host, true);
  std::string note;
  auto lock = lockLogin(host, agent);
  if (!lock) return reportError(lock.error());
  auto removed = secrets.store().remove(secrets::loginSecretName(agent), note);
  if (!removed) return reportError(removed.error());
  if (!*removed) return reportError(Error{fmt::format("no login stored for {}", agent), exit_code::kUsage});
  std::fprintf(stderr, "airlock: %s logged out (the agent's own login on this machine is untouched)\n", agent.c_str());
  if (!note.empty()) std::fprintf(stderr, "airlock: %s\n", note.c_str());
  return 0;
}

}  // namespace

void addLoginCommands(CLI::App& app, int& exitCode, const HostContext& host,
                      const std::vector<std::string>& afterDoubleDash) {
  auto args = std::make_shared<LoginArgs>();
  auto* cmd = app.add_subcommand("login", "Keep an agent's account login on this host; runs get a placeholder");
  cmd->footer(
      "The login goes into airlock's secret store (see `airlock secret ls`: login.AGENT). `airlock run AGENT` then "
      "starts a credential broker on the host: the agent in the VM talks to it with a placeholder token, and the "
      "broker sends the real one to the API and refreshes it. The real token never enters the VM (except OpenCode's "
      "ChatGPT login, which cannot be brokered: it goes in on a tmpfs and comes back refreshed; and a custom agent's "
      "`format: token` token, given to it in its variable), and the model "
      "API needs no egress allowance there. While a login is stored, the agent's API-key variables (e.g. "
      "ANTHROPIC_API_KEY) are not forwarded; name one with --env to use the key instead.\n\n"
      "Without --from-host, --from-env or --with-token, on a terminal, an agent with a login of its own airlock can "
      "run (claude-code, gemini: a sign-in link and code; codex, opencode: a ChatGPT device code) logs in inside a VM "
      "that reaches only its login hosts; the credential it writes is read back into the store before the VM stops. "
      "Otherwise (or with --with-token) a long-lived token is read from standard input.\n\n"
      "Examples:\n"
      "  airlock login claude-code --from-host      # your Claude Pro/Max login from ~/.claude\n"
      "  airlock login claude-code                  # sign in to Claude in a VM (open the link, paste the code)\n"
      "  claude setup-token                          # prints a long-lived token, then:\n"
      "  airlock login claude-code --with-token --expires 2027-12-31   # paste it (not shown)\n"
      "  airlock login claude-code --from-env CLAUDE_CODE_OAUTH_TOKEN\n"
      "  airlock login gemini --from-host           # your Google login from ~/.gemini\n"
      "  airlock login gemini                       # sign in to Google in a VM (then /quit Gemini's chat)\n"
      "  airlock login codex --from-host            # your ChatGPT login from ~/.codex\n"
      "  airlock login codex                        # log in to ChatGPT in a VM (device code); opencode too\n"
      "  airlock login opencode --from-host         # OpenCode's ChatGPT login (enters the VM: not brokerable)\n"
      "  airlock logout claude-code");
  cmd->add_option("agent", args->agent, "Agent name (see `airlock agents`)")->required();
  auto* host_ = cmd->add_flag("--from-host", args->fromHost,
                              "Import the login the agent made on this machine (its credential file under $HOME)");
  cmd->add_option("--from-env", args->fromEnv,
                  "Take a long-lived token (`claude setup-token`'s) from this environment variable; "
                  "Codex, Gemini and OpenCode logins come from --from-host or a login in a VM")
      ->excludes(host_);
  cmd->add_flag("--with-token", args->withToken,
                "Read a long-lived token from standard input (`claude setup-token`'s), also on a terminal "
                "(there, without it, the agent's own login runs in a VM)")
      ->excludes(host_)
      ->excludes("--from-env");
  cmd->add_option("--expires", args->expires,
                  "When the long-lived token stops working, UTC: 2027-12-31 or 2027-12-31T08:00:00Z (`claude "
                  "setup-token`'s last a year); runs warn a week before and refuse it after");
  // A token given as an argument is refused without being repeated.
  cmd->allow_extras();
  auto extra = std::make_shared<std::vector<std::string>>();
  cmd->add_option("TOKEN", *extra)->group("");
  cmd->callback([cmd, args, extra, &exitCode, &host, &afterDoubleDash] {
    if (!extra->empty() || !cmd->remaining().empty() || !afterDoubleDash.empty()) {
      exitCode =
          reportError(Error{"airlock login takes only AGENT and --from-host or --from-env NAME: a token is "
                            "read from standard input, never from the command line (every user can read "
                            "argv): printenv TOKEN | airlock login AGENT",
                            exit_code::kUsage});
      return;
    }
    exitCode = login(host, *args);
  });

  auto agent = std::make_shared<std::string>();
  auto* out = app.add_subcommand("logout", "Remove an agent's login kept by airlock");
  out->add_option("agent", *agent, "Agent name")->required();
  out->callback([agent, &exitCode, &host] { exitCode = logout(host, *agent); });
}

}  // namespace airlock::cli
