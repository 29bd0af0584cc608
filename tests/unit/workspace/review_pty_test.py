#!/usr/bin/env python3
"""`airlock review` driven in a real pty: a failing $PAGER falls back to the
terminal (said once), the diff shows the mode that lands, a FIFO is listed as
skipped, a file accepted inside a rejected new directory stays pending
(blocked), and the exit code is 70 (changes pending; a FIFO carries no
content, so listing it does not make it 74).

Usage: review_pty_test.py /path/to/airlock"""
import atexit
import io
import os
import pty
import select
import shutil
import sys
import tarfile
import tempfile
import time

airlock = sys.argv[1]
os.umask(0o022)  # the landing modes below assume the common umask
tmp = tempfile.mkdtemp(prefix="airlock-review-pty-")
atexit.register(shutil.rmtree, tmp, True)
ws, session, tar = f"{tmp}/ws", f"{tmp}/session", f"{tmp}/changes.tar"
os.mkdir(ws)
with open(f"{ws}/a.txt", "w") as f:
    f.write("a\n")
env = dict(os.environ, XDG_STATE_HOME=f"{tmp}/state", PAGER="/nonexistent/pager")
if os.spawnve(os.P_WAIT, airlock, [airlock, "snapshot", "-w", ws, "-s", session], env) != 0:
    sys.exit("snapshot failed")

with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT) as t:
    def add(name, data=b"", mode=0o644, kind=tarfile.REGTYPE):
        ti = tarfile.TarInfo(name)
        ti.mode, ti.type = mode, kind
        ti.size = len(data) if kind == tarfile.REGTYPE else 0
        t.addfile(ti, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    add("newdir/", kind=tarfile.DIRTYPE, mode=0o755)
    add("newdir/inner.txt", b"inner\n")
    add("pipe", kind=tarfile.FIFOTYPE)
    add("run.sh", b"#!/bin/sh\n", 0o4755)

pid, fd = pty.fork()
if pid == 0:
    os.execve(airlock, [airlock, "review", "-w", ws, "-s", session, "-c", tar], env)

out = b""
def read_more(timeout):
    """Reads what arrives within `timeout` seconds; False once the child closed the pty."""
    global out
    r, _, _ = select.select([fd], [], [], timeout)
    if not r:
        return True
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        return False
    out += chunk
    return bool(chunk)

def wait_for_prompt(n, timeout=20):
    end = time.time() + timeout
    while out.count(b"accept? ") < n and time.time() < end:
        if not read_more(0.1):
            break
    if out.count(b"accept? ") < n:
        sys.exit(f"timed out waiting for prompt {n}; output so far:\n{out.decode(errors='replace')}")

# Items in path order: newdir (reject), newdir/inner.txt (accept), pipe (skipped, not asked), run.sh (d, d, accept).
for i, answer in enumerate([b"r", b"a", b"d", b"d", b"a"]):
    wait_for_prompt(i + 1)
    os.write(fd, answer + b"\n")
end = time.time() + 20
while time.time() < end and read_more(0.5):
    pass
_, status = os.waitpid(pid, 0)
text = out.decode(errors="replace")

def check(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}\n---- output ----\n{text}")

check(text.count("airlock: pager '/nonexistent/pager'") == 1, "the pager failure is said exactly once")
check(text.count("run.sh: added") == 2, "both diffs are shown in the terminal")
check("mode 0755, executable (the agent set 4755; setuid/setgid/sticky bits are stripped on flush)" in text,
      "landing mode")
check("new file mode 100755" in text, "git mode line matches what lands")
check("pipe: skipped (FIFO; only files, directories and symlinks are reviewed)" in text, "FIFO listed as skipped")
check("newdir/inner.txt stays pending: its new directory 'newdir' was not accepted" in text, "blocked child reported")
check(not os.path.exists(f"{ws}/newdir"), "a rejected new directory is not created")
check(not os.path.exists(f"{ws}/pipe"), "a FIFO is never flushed")
check(oct(os.stat(f"{ws}/run.sh").st_mode & 0o7777) == "0o755", "run.sh lands as 0755")
check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 70, f"exit code 70, got {status}")
print("ok")
