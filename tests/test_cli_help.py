"""``tavern --help`` and every command's help, byte for byte as the golden files under
tests/golden/help/ keep them: the command line is assembled from one module per command, and
none of its options, texts or order may change on the way; and each reads as plain text. (The
installed ``tavern`` command prints the same parser's help: tests/test_command_line.py.)"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tavern_cli.cli import build_parser

GOLDEN = Path(__file__).parent / "golden" / "help"
COMMANDS = [
    [],
    ["serve"],
    ["tournament"],
    ["worker"],
    ["validate"],
    ["play"],
    ["match"],
    ["replay"],
    ["test"],
    ["records"],
    ["records", "copy"],
    ["records", "export"],
    ["bots"],
    ["bots", "add"],
    ["bots", "rotate"],
    ["bots", "revoke"],
    ["bots", "list"],
    ["bots", "versions"],
    ["bots", "upload"],
    ["bots", "logs"],
    ["bots", "try"],
    ["ladder"],
    ["ladder", "season"],
    ["ladder", "ban"],
    ["ladder", "unban"],
    ["house"],
]


def help_of(words: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit:
        build_parser().parse_args([*words, "--help"])
    assert exit.value.code == 0
    return out.getvalue()


def golden_file(words: list[str]) -> Path:
    return GOLDEN / f"{'-'.join(['tavern', *words])}.txt"


@pytest.fixture(autouse=True)
def columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """argparse wraps to the terminal's width: one width, whatever runs the tests."""
    monkeypatch.setenv("COLUMNS", "100")


@pytest.mark.parametrize("words", COMMANDS, ids=lambda words: " ".join(["tavern", *words]))
def test_a_commands_help_is_the_golden_one(words: list[str]) -> None:
    help_text = help_of(words)
    assert help_text == golden_file(words).read_text(encoding="utf-8")
    assert "`" not in help_text  # no reStructuredText (``tavern``) nor Markdown


def test_every_command_and_subcommand_has_its_golden_help() -> None:
    def paths(words: list[str]) -> list[list[str]]:
        """The command and, as its usage line lists them (``{add,rotate,...} ...``), each of its
        subcommands'."""
        found = [words]
        usage = help_of(words).split("\n\n", 1)[0]
        if listed := re.search(r"\{([\w,-]+)\}\s+\.\.\.", usage):
            for name in listed.group(1).split(","):
                found += paths([*words, name])
        return found

    assert sorted(paths([])) == sorted(COMMANDS)
    assert sorted(GOLDEN.iterdir()) == sorted(golden_file(words) for words in COMMANDS)
