#!/usr/bin/env python3
"""Writes a wheel for tests (no setuptools, no network): airlock-probe 1.0,
pure Python, whose console script `airlock-probe` writes
/workspace/probe.txt saying which Python ran it and from which prefix, then
exits 0. Usage: make_test_wheel.py DIR  (prints the wheel's path)."""
import base64
import hashlib
import os
import sys
import zipfile

NAME, VERSION = "airlock_probe", "1.0"
DIST = f"{NAME}-{VERSION}.dist-info"
FILES = {
    f"{NAME}/__init__.py": (
        "import sys\n\n\n"
        "def main():\n"
        "    with open('/workspace/probe.txt', 'w') as out:\n"
        "        out.write(f'probe ran with Python {sys.version_info[0]}.{sys.version_info[1]} "
        "from {sys.prefix}\\n')\n"
        "    return 0\n"
    ),
    f"{DIST}/METADATA": f"Metadata-Version: 2.1\nName: airlock-probe\nVersion: {VERSION}\n",
    f"{DIST}/WHEEL": "Wheel-Version: 1.0\nGenerator: airlock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    f"{DIST}/entry_points.txt": "[console_scripts]\nairlock-probe = airlock_probe:main\n",
}


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def main():
    out = os.path.join(sys.argv[1], f"{NAME}-{VERSION}-py3-none-any.whl")
    record = "".join(record_line(p, d.encode()) for p, d in FILES.items()) + f"{DIST}/RECORD,,\n"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as whl:
        for path, data in FILES.items():
            whl.writestr(path, data)
        whl.writestr(f"{DIST}/RECORD", record)
    print(out)


if __name__ == "__main__":
    main()
