#include "image/pypi_packages.h"

#include <fcntl.h>
#include <ftw.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/encoding.h"
#include "common/exit_codes.h"
#include "common/fd.h"
#include "common/paths.h"
#include "image/oci/layer_unpack.h"
#include "image/rootfs_staging.h"
#include "workspace/safe_fs.h"

namespace airlock::image {
namespace {

/// The names of the entries of `dir`, or an error naming `what`.
Result<std::vector<std::string>> entriesOf(const std::string& dir, const std::string& what, const std::string& agent) {
  auto names = listDir(dir);
  if (!names) return failWith(exit_code::kImage, "the {} build VM's {}: {}", agent, what, names.error().message);
  return names;
}

/// True when `path` is a directory (not a symlink to one).
bool isRealDir(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// Copies the regular file `from` to `to` (0644), not following a symlink at `from`.
Result<> copyRegularFile(const std::string& from, const std::string& to) {
  Fd in(::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in) return failWith(exit_code::kImage, "cannot open {}: {}", from, errnoText(errno));
  Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!out) return failWith(exit_code::kImage, "cannot create {}: {}", to, errnoText(errno));
  bool reflinked = false;
  auto copied = workspace::copyAndHash(in.get(), out.get(), true, reflinked, from);
  if (!copied) return std::unexpected(copied.error());
  return {};
}

/// nftw callback (FTW_PHYS): clears setuid and setgid bits. Symlinks are
/// skipped, so fchmodat() acts on the entry itself; an entry that cannot be
/// checked or changed fails the walk.
int clearSetId(const char* path, const struct stat* st, int type, FTW*) {
  if (type == FTW_SL || type == FTW_SLN) return 0;
  if (type == FTW_NS || type == FTW_DNR) return -1;
  if ((st->st_mode & (S_ISUID | S_ISGID)) == 0) return 0;
  return ::fchmodat(AT_FDCWD, path, st->st_mode & 07777 & ~(S_ISUID | S_ISGID), 0) == 0 ? 0 : -1;
}

/// The `pip download` command that fetches what --from needs, on another machine.
std::string pipDownloadLine(std::string_view package, std::string_view version) {
  return fmt::format(
      "on a machine that reaches PyPI run `pip download -d DIR --only-binary=:all: --python-version "
      "3.11 --platform manylinux_2_36_x86_64 --platform manylinux_2_28_x86_64 --platform "
      "manylinux2014_x86_64 {}=={}`",
      package, version);
}

}  // namespace

const std::vector<std::string>& pypiBasePackages() {
  static const std::vector<std::string> packages = {"python3", "python3-venv"};
  return packages;
}

const std::vector<std::string>& pypiHosts() {
  static const std::vector<std::string> hosts = {"pypi.org:443", "files.pythonhosted.org:443"};
  return hosts;
}

std::string pipInstallScript(std::string_view package, std::string_view version, std::string_view prefix,
                             bool offline, bool quiet) {
  const std::string venv = shellQuoted(prefix);
  const std::string requirement = shellQuoted(std::string(package) + "==" + std::string(version));
  std::string from = offline ? " --no-index --find-links /workspace/wheels" : " --retries 2 --timeout 30";
  if (quiet) from += " --quiet";
  const std::string parent = shellQuoted("/workspace" + std::string(prefix.substr(0, prefix.rfind('/'))));
  return fmt::format(
      "set -e\n"
      "python3 -m venv {venv}\n"
      "{venv}/bin/pip install --no-input --disable-pip-version-check --no-cache-dir --progress-bar off{from} "
      "{requirement} >&2\n"
      "mkdir -p {parent}\n"
      "cp -a {venv} {parent}/\n",
      fmt::arg("venv", venv), fmt::arg("from", from), fmt::arg("requirement", requirement),
      fmt::arg("parent", parent));
}

Result<size_t> stageDistributions(const std::string& fromDir, const std::string& dest, std::string_view package,
                                  std::string_view version) {
  auto names = listDir(fromDir);
  if (!names) return failWith(exit_code::kUsage, "--from {}: {}", fromDir, names.error().message);
  const std::string wheels = dest + "/wheels";
  if (auto r = makeDirs(wheels, 0755); !r) return std::unexpected(r.error());
  size_t copied = 0;
  for (const auto& name : *names) {
    if (!name.ends_with(".whl") && !name.ends_with(".tar.gz") && !name.ends_with(".zip")) continue;
    struct stat st {};
    if (::lstat((fromDir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (auto r = copyRegularFile(fromDir + "/" + name, wheels + "/" + name); !r) return std::unexpected(r.error());
    ++copied;
  }
  if (copied == 0)
    return failWith(exit_code::kUsage,
                    "--from {} holds no wheel (.whl) or sdist (.tar.gz, .zip); it must hold {}=={} and its "
                    "dependencies: {}",
                    fromDir, package, version, pipDownloadLine(package, version));
  return copied;
}

Result<> layVenv(const std::string& changeSet, const std::string& scratch, const std::string& root,
                 const std::string& prefix, const std::string& binary, const std::string& installAs,
                 const std::string& agent) {
  Fd rootFd(::open(scratch.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!rootFd) return failWith(exit_code::kImage, "cannot open {}: {}", scratch, errnoText(errno));
  auto applied = oci::applyLayer(rootFd.get(), changeSet, fmt::format("the {} build VM's export", agent));
  if (!applied) return std::unexpected(applied.error());
  // Exactly the prefix's directories and, below the last, the venv.
  std::string dir = scratch;
  for (size_t at = 1; at < prefix.size();) {
    size_t slash = std::min(prefix.find('/', at), prefix.size());
    const std::string part = prefix.substr(at, slash - at);
    auto names = entriesOf(dir, "export", agent);
    if (!names) return std::unexpected(names.error());
    for (const auto& name : *names)
      if (name != part)
        return failWith(exit_code::kImage, "the {} build VM's export holds {}/{}, not only {}: refused", agent,
                        dir.substr(scratch.size()), name, prefix);
    dir += "/" + part;
    if (!isRealDir(dir))
      return failWith(exit_code::kImage, "the {} build VM's export has no directory {} (the install did not finish)",
                      agent, prefix);
    at = slash + 1;
  }
  if (::nftw(dir.c_str(), clearSetId, 64, FTW_PHYS) != 0)
    return failWith(exit_code::kImage, "cannot clear setuid bits under {}: {}", dir, errnoText(errno));
  const std::string program = dir + "/bin/" + binary;
  struct stat st {};
  if (::lstat(program.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return failWith(exit_code::kImage, "the {} venv has no program bin/{} (check `binary` in the agent spec)", agent,
                    binary);
  const std::string target = root + prefix;
  if (auto r = makeDirs(target.substr(0, target.rfind('/')), 0755); !r) return r;
  if (::rename(dir.c_str(), target.c_str()) != 0)
    return failWith(exit_code::kImage, "cannot move the venv to {}: {}", target, errnoText(errno));
  return writeRootFile(root, "usr/local/bin/" + installAs,
                       fmt::format("#!/bin/sh\nexec {}/bin/{} \"$@\"\n", shellQuoted(prefix), shellQuoted(binary)),
                       0755);
}

Result<> checkPypiReachable(std::string_view agent, std::string_view package, std::string_view version,
                            int timeoutMs) {
  auto unreachable = [&](const std::string& why) {
    return failWith(exit_code::kImage, "PyPI unreachable: {}; {}, then `airlock image build {} --from DIR` here", why,
                    pipDownloadLine(package, version), agent);
  };
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo("pypi.org", "443", &hints, &found); rc != 0)
    return unreachable(fmt::format("cannot resolve pypi.org: {}", ::gai_strerror(rc)));
  std::string why = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    Fd s(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!s) continue;
    if (::connect(s.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = errnoText(errno);
      continue;
    }
    pollfd p{s.get(), POLLOUT, 0};
    if (::poll(&p, 1, timeoutMs) != 1) {
      why = fmt::format("no answer within {} s", timeoutMs / 1000);
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == 0) {
      ::freeaddrinfo(found);
      return {};
    }
    why = errnoText(err);
  }
  ::freeaddrinfo(found);
  return unreachable(fmt::format("cannot connect to pypi.org:443: {}", why));
}

}  // namespace airlock::image
