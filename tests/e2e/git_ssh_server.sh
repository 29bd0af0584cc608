# Sourced by the e2e tests that push to a git host over SSH
# (airlock-git@git.example.test:o/r.git): Debian's OpenSSH sshd on the fake
# internet of fake_internet.sh, serving git through git-shell, with public
# key authentication only and a log that names the key it accepted. Needs
# root (accounts, sshd's privilege separation) and the pids array of
# fake_internet_teardown.
#
# The sshd binary comes from the openssh-server package, fetched with
# `apt-get download` and unpacked with `dpkg-deb -x` into
# ${AIRLOCK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock}/test-tools/
# (once; later runs reuse it): installing openssh-server would start a
# system sshd on the machine. Its libraries come from installed packages
# (libwrap0 is the only one scripts/setup installs for it).
#
# git_sshd_up INET ADDR WORK [NAME...]: starts sshd in namespace INET on
# ADDR:22 (appending its pid to pids) with its own configuration, host key
# and log in WORK, and returns once it listens; prints nothing unless it
# fails (then says why on stderr and returns 1). Logins go to the account
# airlock-git (shell git-shell, home WORK/git-home: a remote
# airlock-git@NAME:o/r.git is WORK/git-home/o/r.git, see git_sshd_repo)
# with a key listed in GIT_SSHD_AUTHORIZED, empty at first. Makes the
# account, and sshd's privilege separation account `sshd` and directory
# /run/sshd when missing; git_sshd_down removes what it made. Gives WORK
# o+x (sshd reads the authorized keys, and git-shell the repositories, as
# airlock-git). Sets:
#   GIT_SSHD_LOG         sshd's log (LogLevel VERBOSE): a login with a key
#                        writes "Accepted publickey for airlock-git from
#                        192.0.2.1 port N ssh2: ED25519 SHA256:..."
#   GIT_SSHD_AUTHORIZED  the authorized_keys file (the test writes it; sshd
#                        reads it at every login)
#   GIT_SSHD_HOME        airlock-git's home, where the repositories live
#   GIT_SSHD_KNOWN_HOSTS a known_hosts file naming the host key for NAME...
#                        (ADDR when no NAME is given), for the client's
#                        UserKnownHostsFile with StrictHostKeyChecking=yes
#   GIT_SSHD_PID         sshd's pid
# and writes the host key as it appears in a known_hosts line after the host
# names ("ssh-ed25519 AAAA...") to WORK/sshd_known_host_key.pub.
#
# git_sshd_repo PATH: a bare repository GIT_SSHD_HOME/PATH (e.g. o/r.git,
# default branch main) owned by airlock-git. Reading it as root takes
# `git -c safe.directory='*'` (another user's repository).
#
# git_sshd_down: stops sshd and removes the accounts and the directory
# git_sshd_up made; safe to call twice, or after git_sshd_up failed
# halfway. Call it in the test's EXIT trap before fake_internet_teardown.

git_sshd_user=airlock-git

# _git_sshd_binary: sets git_sshd_bin to the unpacked sshd, fetching the
# package on first use (under a lock: tests may share the cache).
_git_sshd_binary() {
  local tools=${AIRLOCK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock}/test-tools
  local root=$tools/openssh-server
  git_sshd_bin=$root/usr/sbin/sshd
  [ -x "$git_sshd_bin" ] && return 0
  mkdir -p "$tools" || return 1
  (
    flock 9
    [ -x "$git_sshd_bin" ] && exit 0
    tmp=$(mktemp -d "$tools/tmp-openssh-server.XXXXXX") || exit 1
    trap 'rm -rf "$tmp"' EXIT
    # apt writes the epoch's colon as %3a in the file name.
    if ! (cd "$tmp" && apt-get download -q openssh-server >apt.out 2>&1); then
      echo "git_sshd_up: apt-get download openssh-server failed (no package lists? apt-get update):" >&2
      cat "$tmp/apt.out" >&2
      exit 1
    fi
    deb=$(ls "$tmp"/openssh-server_*.deb) && dpkg-deb -x "$deb" "$tmp/root" || exit 1
    rm -f "$tools"/openssh-server_*.deb
    mv "$deb" "$tools/" && mv -T "$tmp/root" "$root"
  ) 9>"$tools/.openssh-server.lock" || return 1
  [ -x "$git_sshd_bin" ]
}

git_sshd_up() {
  local inet=$1 addr=$2 work=$3 missing key
  shift 3
  local names=("$@")
  ((${#names[@]})) || names=("$addr")
  if [ "$(id -u)" != 0 ]; then
    echo "git_sshd_up: needs root (accounts, sshd's privilege separation)" >&2
    return 1
  fi
  _git_sshd_binary || { echo "git_sshd_up: no sshd from openssh-server" >&2; return 1; }
  missing=$(ldd "$git_sshd_bin" 2>&1 | awk '/not found/ { print $1 }')
  if [ -n "$missing" ]; then
    echo "git_sshd_up: $git_sshd_bin needs libraries that are not installed: $missing (scripts/setup installs them)" >&2
    return 1
  fi
  [ -x /usr/bin/git-shell ] || { echo "git_sshd_up: no /usr/bin/git-shell (package git)" >&2; return 1; }
  GIT_SSHD_HOME=$work/git-home
  GIT_SSHD_LOG=$work/sshd.log
  GIT_SSHD_AUTHORIZED=$work/sshd_authorized_keys
  GIT_SSHD_KNOWN_HOSTS=$work/sshd_known_hosts

  # The accounts, under test_user.sh's lock. sshd (Debian's build) runs its
  # pre-authentication child as `sshd`, chrooted to /run/sshd (root's, not
  # group/world-writable; the path is built in). A leftover airlock-git (a
  # test killed before its cleanup) is taken over. The password '*' rather
  # than useradd's '!': with UsePAM no, sshd refuses a '!' account as
  # locked, key or not. git-shell is not in /etc/shells; sshd does not ask
  # (without PAM it only wants the shell executable).
  {
    flock 9
    if ! getent passwd sshd >/dev/null; then
      useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd &&
        git_sshd_made_privsep_user=1
    fi
    if [ ! -d /run/sshd ]; then
      mkdir -m 0755 /run/sshd && git_sshd_made_privsep_dir=1
    fi
    if getent passwd "$git_sshd_user" >/dev/null; then
      usermod -d "$GIT_SSHD_HOME" -s /usr/bin/git-shell -p '*' "$git_sshd_user" && git_sshd_made_git_user=1
    else
      useradd --system -M -U -d "$GIT_SSHD_HOME" -s /usr/bin/git-shell -p '*' "$git_sshd_user" &&
        git_sshd_made_git_user=1
    fi
  } 9>/tmp/airlock-test-account.lock
  getent passwd sshd >/dev/null && [ -d /run/sshd ] && [ -n "${git_sshd_made_git_user:-}" ] ||
    { echo "git_sshd_up: cannot make the accounts sshd and $git_sshd_user, or /run/sshd" >&2; return 1; }

  chmod o+x "$work" &&
    mkdir -p "$GIT_SSHD_HOME" &&
    chown "$git_sshd_user:$git_sshd_user" "$GIT_SSHD_HOME" &&
    rm -f "$work/sshd_host_key" "$work/sshd_host_key.pub" &&
    ssh-keygen -q -t ed25519 -N '' -C git-sshd-host -f "$work/sshd_host_key" &&
    key=$(cut -d' ' -f1,2 "$work/sshd_host_key.pub") &&
    echo "$key" >"$work/sshd_known_host_key.pub" &&
    echo "$(IFS=,; echo "${names[*]}") $key" >"$GIT_SSHD_KNOWN_HOSTS" &&
    : >"$GIT_SSHD_AUTHORIZED" && chmod 0644 "$GIT_SSHD_AUTHORIZED" &&
    : >"$GIT_SSHD_LOG" || { echo "git_sshd_up: cannot prepare $work" >&2; return 1; }
  # MaxStartups: no random refusals of concurrent unauthenticated
  # connections (the default starts at 10). ModuliFile: the package's, for
  # diffie-hellman-group-exchange (no /etc/ssh/moduli without the package).
  cat >"$work/sshd_config" <<EOF
ListenAddress $addr:22
HostKey $work/sshd_host_key
PidFile $work/sshd.pid
ModuliFile ${git_sshd_bin%/usr/sbin/sshd}/etc/ssh/moduli
AuthorizedKeysFile $GIT_SSHD_AUTHORIZED
AllowUsers $git_sshd_user
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin no
StrictModes no
DisableForwarding yes
PermitTTY no
PrintMotd no
PrintLastLog no
MaxStartups 100
LogLevel VERBOSE
EOF

  # sshd needs its absolute path (it re-executes itself per connection).
  ip netns exec "$inet" "$git_sshd_bin" -D -f "$work/sshd_config" -E "$GIT_SSHD_LOG" </dev/null \
    >"$work/sshd.out" 2>&1 &
  GIT_SSHD_PID=$!
  pids+=("$GIT_SSHD_PID")
  for _ in $(seq 100); do
    grep -q "^Server listening on $addr port 22" "$GIT_SSHD_LOG" 2>/dev/null && return 0
    kill -0 "$GIT_SSHD_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "git_sshd_up: sshd is not listening on $addr:22: $(cat "$work/sshd.out" "$GIT_SSHD_LOG")" >&2
  return 1
}

git_sshd_repo() {
  local repo=$GIT_SSHD_HOME/$1
  mkdir -p "$(dirname "$repo")" &&
    git -c init.defaultBranch=main init -q --bare "$repo" &&
    chown -R "$git_sshd_user:$git_sshd_user" "$GIT_SSHD_HOME"
}

git_sshd_down() {
  if [ -n "${GIT_SSHD_PID:-}" ]; then
    kill "$GIT_SSHD_PID" 2>/dev/null || true
    wait "$GIT_SSHD_PID" 2>/dev/null || true
    GIT_SSHD_PID=
  fi
  if [ -n "${git_sshd_made_git_user:-}" ]; then
    # A session sshd still serves (a push cut short) keeps the account busy.
    pkill -KILL -u "$git_sshd_user" 2>/dev/null || true
    for _ in $(seq 20); do userdel "$git_sshd_user" 2>/dev/null && break; sleep 0.1; done
    getent passwd "$git_sshd_user" >/dev/null && echo "git_sshd_down: cannot remove the account $git_sshd_user" >&2
    git_sshd_made_git_user=
  fi
  if [ -n "${git_sshd_made_privsep_user:-}" ]; then
    userdel sshd 2>/dev/null || echo "git_sshd_down: cannot remove the account sshd" >&2
    git_sshd_made_privsep_user=
  fi
  if [ -n "${git_sshd_made_privsep_dir:-}" ]; then
    rmdir /run/sshd 2>/dev/null || true
    git_sshd_made_privsep_dir=
  fi
  return 0
}
