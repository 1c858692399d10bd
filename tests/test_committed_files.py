"""What is committed names no path of the machine it was written on: no developer's folder, no
scratch folder, no checkout's own location. A bench, a doc or a test that needs a file outside
the repository takes it as an option (or names the public repository), and paths inside it are
relative. System locations (``/usr/bin/chromium``, ``/dev/null``, the deploy files' ``/etc``
and ``/opt/tavern``) are the same on every machine: the allow-list names them."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from tests.conftest import ROOT

# Top folders under which a machine keeps a person's or a session's files: home folders, scratch
# and temporary folders, mounted disks, and wherever this checkout, its home and its temporary
# folder are on the machine running the test.
MACHINE_ROOTS = frozenset(
    {"work", "tmp", "home", "root", "Users", "mnt", "media", "scratch", "workspace", "private"}
    | {Path(folder).resolve().parts[1] for folder in (ROOT, Path.home(), tempfile.gettempdir())}
)
# Paths that are the same on every machine (Debian's programs, devices, the deploy files').
ALLOWED = ("/usr/", "/dev/", "/etc/", "/bin/", "/sbin/", "/proc/", "/opt/tavern", "/var/lib/tavern")
# An absolute path: a slash not inside a word, a URL or a relative path, then its top folder.
ABSOLUTE = re.compile(r"(?<![\w.~:/$@{}-])/([A-Za-z][\w.-]*)/")


def machine_paths(text: str) -> list[str]:
    """The absolute paths in ``text`` that lie under one of a machine's own folders."""
    found = []
    for match in ABSOLUTE.finditer(text):
        rest = text[match.start() :]
        if match.group(1) in MACHINE_ROOTS and not rest.startswith(ALLOWED):
            found.append(rest.split(maxsplit=1)[0][:80])
    for match in re.finditer(r"(?<![\w.~:/-])/var/(tmp|folders)/\S*", text):
        found.append(match.group()[:80])
    return found


def test_the_check_finds_a_machine_s_paths_and_lets_system_ones_be() -> None:
    assert machine_paths('MIRROR = Path("/work/.mirror/PIWEEK+dwarven-tavern/repo/.git")') == [
        '/work/.mirror/PIWEEK+dwarven-tavern/repo/.git")'
    ]
    assert machine_paths("--cache DIR (default ``/tmp/tavern-bench-original``)") == [
        "/tmp/tavern-bench-original``)"
    ]
    assert machine_paths("cd /home/ann/arena && cp /Users/bo/x . ; ls /var/tmp/y") == [
        "/home/ann/arena",
        "/Users/bo/x",
        "/var/tmp/y",
    ]
    system = "CHROMIUM = '/usr/bin/chromium'; exec 3<>/dev/tcp/127.0.0.1/9000; /etc/tavern/n.json"
    assert machine_paths(system) == []
    routes = "GET /api/games/ID, https://github.com/home/x, docs/tmp/x, ../work/y, {root}/tmp/"
    assert machine_paths(routes) == []


def test_no_committed_file_names_a_path_of_this_machine() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    named: dict[str, list[str]] = {}
    for name in listed.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path == Path(__file__):  # its examples above
            continue
        data = path.read_bytes()
        if b"\0" in data:  # an image, an archive: not text
            continue
        found = machine_paths(data.decode(errors="replace"))
        if found:
            named[name] = found
    assert named == {}
