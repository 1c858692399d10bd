"""The parser of the ``tavern`` command and the types of its flags: each number checked against
its range (a flag that sets a config key against the config file's), each file to write in a
folder that exists, so that a mistake is one line naming the flag, and exit status 2."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, Protocol

from server.config import setting_range
from server.errors import Rejected
from server.games.base import TimeBank
from server.games.settings import bounded_int
from server.records import is_postgres
from server.replay import TurnRange
from server.sprt import Sprt

INTEGER = re.compile(r"[+-]?[0-9]+")


class Parser(argparse.ArgumentParser):
    """A bad value for an argument is said in one line, naming the argument; a missing or
    unknown argument also shows the usage."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument "):  # argparse's words for one argument's value
            self.exit(2, f"{self.prog}: {message}\n")
        super().error(message)


class Subcommands(Protocol):
    """What each command module adds its parser to (``tavern_cli.cli`` assembles them): what
    ``Parser.add_subparsers`` gives."""

    def add_parser(self, name: str, **kwargs: Any) -> Parser: ...


def int_flag(low: int, high: int) -> Callable[[str], int]:
    """An integer from ``low`` to ``high``, in the config file's words when it is not."""

    def parse(text: str) -> int:
        try:
            return bounded_int(int(text) if INTEGER.fullmatch(text) else text, low, high)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def setting_flag(field: str) -> Callable[[str], int]:
    """A flag that sets (or stands for) an integer setting: the config file's range."""
    return int_flag(*setting_range(field))


def host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT``, a TCP address."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"HOST:PORT, got {text!r}")
    return host, int(port)


def writable_file(text: str) -> Path:
    """A file a command writes: in a folder that exists (a flag never creates one)."""
    path = Path(text)
    folder = path.parent
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"there is no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"{text} cannot be written")
    return path


def records_to_write(text: str) -> str:
    """Records a command writes: a postgresql:// URL, or an SQLite file as ``writable_file``."""
    if not is_postgres(text):
        writable_file(text)
    return text


def clock_flag(text: str) -> TimeBank:
    """``INITIAL_MS+INCREMENT_MS`` (or ``INITIAL_MS``): a time bank per seat, as a
    ``create-simulation``'s ``clock``."""
    initial, _, increment = text.partition("+")
    try:
        fields = {"initialMs": int(initial), "incrementMs": int(increment or "0")}
        return TimeBank.from_wire(fields)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not INITIAL_MS+INCREMENT_MS: {text!r}") from None
    except Rejected as rejected:
        raise argparse.ArgumentTypeError(str(rejected.reason)) from None


def sprt_flag(command: argparse.ArgumentParser, help_text: str) -> None:
    """``--sprt ELO0 ELO1`` (default 0 10): the bounds of a new version's SPRT trial."""
    command.add_argument(
        "--sprt",
        nargs=2,
        type=float_flag,
        default=(0.0, 10.0),
        metavar=("ELO0", "ELO1"),
        help=help_text,
    )


def sprt_of(bounds: Sequence[float]) -> Sprt | None:
    """The test the flag's bounds make; None, said on stderr, if they make none."""
    try:
        return Sprt(bounds[0], bounds[1])
    except ValueError as error:
        print(f"tavern: --sprt: {error}", file=sys.stderr)
        return None


def float_flag(text: str) -> float:
    """A finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def turn_range(text: str) -> TurnRange:
    try:
        return TurnRange.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
