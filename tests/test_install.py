"""``make run``'s install step, as a new user's first ``make run`` takes it: the arena installs
into a fresh ``.venv`` without setuptools' "Editable installation" banner, its ``tavern`` command
runs, and an install that fails still says why."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

INSTALL_TIMEOUT_S = 600
BANNER = "Editable installation"


def project_copy(folder: Path) -> Path:
    """What a clone holds that the install reads."""
    for name in ("Makefile", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, folder / name)
    for package in ("tavern_cli", "server", "bots", "visor"):
        shutil.copytree(
            ROOT / package, folder / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return folder


def install(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", ".venv/.installed-run"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )


def test_the_first_make_run_installs_without_setuptools_banner(tmp_path: Path) -> None:
    folder = project_copy(tmp_path)
    done = install(folder)
    assert done.returncode == 0, done.stderr
    assert BANNER not in done.stderr
    assert "BuildBackendWarning" not in done.stderr  # nor any other of the build's warnings
    command = folder / ".venv" / "bin" / "tavern"
    # The command runs from anywhere: the package it names (the top one) is installed.
    helped = subprocess.run(
        [str(command), "--help"],
        cwd=folder.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: tavern ")
    # A real error still shows: the same step with a pyproject.toml setuptools refuses.
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace('requires-python = ">=3.11"', 'requires-python = "3.11+"')
    )
    failed = install(folder)
    assert failed.returncode != 0
    assert "requires-python" in failed.stderr, failed.stderr
