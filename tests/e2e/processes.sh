# Sourced by the e2e tests that check no VM is left behind.
#
# qemu_of DIR: prints the pids of the QEMUs that belong to DIR (a test's
# state or work directory): DIR is in the command line, or in the path of
# its stdout (a jailed QEMU names only jail paths; its stdout is its log in
# the run directory). QEMUs of tests running beside this one (the test
# lanes, tests/CMakeLists.txt) are not counted.
qemu_of() {
  local dir=$1 pid
  for pid in $(pgrep -f '^[^ ]*qemu-system-x86_64 ' || true); do
    if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir" ||
      readlink "/proc/$pid/fd/1" 2>/dev/null | grep -qF -- "$dir"; then
      echo "$pid"
    fi
  done
}
