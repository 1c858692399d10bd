"""Which settings file a command reads, and so which records it uses: every ``tavern`` command
finds the records the arena uses by default, wherever it is run from, and says which.

The file is the first of: ``--config FILE``; ``$TAVERN_CONFIG``; ``./config.json``; the installed
arena's own ``config.json``, beside its packages (the checkout's, for the editable install ``make
run`` makes); with none of them, the built-in defaults. A relative ``database`` in a file is
relative to that file's folder (``server.config.load_config``), so that ``tavern tournament``
run from another folder records where ``tavern serve`` reads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from server.config import ArenaConfig, without_password

ENVIRONMENT = "TAVERN_CONFIG"
NAME = "config.json"
# The folder the arena's packages are in: a checkout (an editable install) has its config.json
# and pyproject.toml there; an install into site-packages has neither.
INSTALLED = Path(__file__).resolve().parent.parent
DEFAULT_HELP = (
    f"default: ${ENVIRONMENT}, else ./{NAME}, else the installed arena's own {NAME} (the "
    "checkout's), else built-in defaults"
)


@dataclass(frozen=True, slots=True)
class SettingsFile:
    """The settings file a command reads (``None``: the built-in defaults), and how it was
    found."""

    path: Path | None
    found_by: str  # "--config", "$TAVERN_CONFIG", "./config.json", "the installed arena's"


def settings_file(
    given: Path | None, environ: Mapping[str, str] = os.environ, installed: Path = INSTALLED
) -> SettingsFile:
    """The settings file: ``--config``'s, ``$TAVERN_CONFIG``'s, ``./config.json`` or the
    installed arena's (see the module's text)."""
    if given is not None:
        return SettingsFile(given, "--config")
    if environ.get(ENVIRONMENT):
        return SettingsFile(Path(environ[ENVIRONMENT]), f"${ENVIRONMENT}")
    if Path(NAME).is_file():
        return SettingsFile(Path(NAME), f"./{NAME}")
    own = installed / NAME
    if own.is_file() and (installed / "pyproject.toml").is_file():
        return SettingsFile(own, "the installed arena's")
    return SettingsFile(None, "built-in defaults: no config file found")


def records_line(config: ArenaConfig, settings: SettingsFile, database_flag: bool) -> str:
    """The one line a command that opens the records says first: which records, and why those
    (``database_flag``: ``--database`` named them)."""
    database = config.database
    shown = without_password(database) if "://" in database else os.path.abspath(database)
    if database_flag:
        why = "--database"
    elif settings.path is None:
        why = settings.found_by
    else:
        why = f"the database of {os.path.abspath(settings.path)}, {settings.found_by}"
    return f"tavern: records {shown} ({why})"


class RecordsNote:
    """Says, once, on stderr, which records a command opens (``records_line``): called where
    the command opens them, so that a command that opens none (a game file, a mistake on its
    command line) says nothing of them."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.said = False

    def __call__(self) -> None:
        if not self.said:
            self.said = True
            print(self.line, file=sys.stderr, flush=True)
