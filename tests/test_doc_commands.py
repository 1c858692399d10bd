"""The ``tavern play``, ``tavern validate`` and ``tavern match`` examples of README.md and
docs/play.md, taken from the documents and run as written (``tavern play`` with a short
``--turns``, and its ``--output`` in a scratch folder; ``tavern match`` with its records there):
an example can never again name a file that does not exist. The README's plain-shell session
too, on a real arena."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.conftest import ROOT, Running

TAVERN = str(Path(sys.executable).parent / "tavern")  # the command the package installs
DOCUMENTS = ("README.md", "docs/play.md")
COMMANDS = ("play", "validate", "match")
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
TURNS = "12"


Example = tuple[str, list[str], list[list[str]]]


def examples() -> list[Example]:
    """Each ``tavern play``/``tavern validate`` command of the documents' shell blocks (lines
    joined where they end in a backslash), split as a shell splits it, with the ``make`` lines
    before it in its block (what builds the bots it plays)."""
    found = []
    for document in DOCUMENTS:
        for block in SHELL_BLOCK.findall((ROOT / document).read_text()):
            builds: list[list[str]] = []
            for line in block.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words[:1] == ["make"]:
                    builds.append(words)
                elif words[:1] == ["tavern"] and words[1:2] and words[1] in COMMANDS:
                    found.append((document, words[1:], list(builds)))
    return found


EXAMPLES = examples()


def test_the_documents_show_examples_of_both_commands() -> None:
    shown = {(document, words[0]) for document, words, _ in EXAMPLES}
    assert shown == {
        ("README.md", "play"),
        ("README.md", "validate"),
        ("docs/play.md", "play"),
        ("docs/play.md", "match"),
    }


def as_run_here(words: list[str], scratch: Path) -> list[str]:
    """The example with a short ``--turns`` and its ``--output`` file in ``scratch``; a match
    with its records in ``scratch``."""
    if words[0] == "match":
        return [*words, "--database", str(scratch / "match.db")]
    if words[0] != "play":
        return words
    changed = list(words)
    for flag, value in (("--turns", TURNS), ("--output", None)):
        if flag in changed:
            at = changed.index(flag) + 1
            changed[at] = value or str(scratch / Path(changed[at]).name)
        elif value is not None:
            changed += [flag, value]
    return changed


WALKTHROUGH = "docs/improving-a-bot.md"
SHORT = {"--turns": TURNS, "--games": "2"}  # what a walkthrough command plays, here


def walkthrough() -> list[list[str]]:
    """Every ``tavern`` command of the walkthrough's shell blocks, in order."""
    commands = []
    for block in SHELL_BLOCK.findall((ROOT / WALKTHROUGH).read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["tavern"]:
                commands.append(words[1:])
    return commands


def test_the_walkthrough_of_improving_a_bot_runs_as_written(tmp_path: Path) -> None:
    """Its commands in order, each game short, its game files in a scratch folder: each later
    command reads what an earlier one wrote."""
    commands = walkthrough()
    assert [words[0] for words in commands] == ["play", "replay", "play", "match"]
    for words in commands:
        changed = [str(tmp_path / word) if word.endswith(".jsonl") else word for word in words]
        if words[0] == "match":
            changed = as_run_here(changed, tmp_path)
            changed[changed.index("--games") + 1] = SHORT["--games"]
        elif words[0] == "play":
            for flag, value in SHORT.items():
                if flag in changed:
                    changed[changed.index(flag) + 1] = value
                elif flag == "--turns":
                    changed += [flag, value]
        run = subprocess.run(
            [TAVERN, *changed], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
        )
        assert run.returncode == 0, f"{shlex.join(words)}\n{run.stdout}\n{run.stderr}"
        if words[0] == "match":
            assert re.search(r"^verdict: (H1 accepted|H0 accepted|inconclusive)", run.stdout, re.M)


@pytest.mark.parametrize(
    ("document", "words", "builds"),
    EXAMPLES,
    ids=[f"{d}:{w[0]}:{n}" for n, (d, w, _) in enumerate(EXAMPLES)],
)
def test_a_documented_example_runs_as_written(
    document: str, words: list[str], builds: list[list[str]], tmp_path: Path
) -> None:
    for build in builds:
        made = subprocess.run(
            build, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
        )
        assert made.returncode == 0, f"{document}: {shlex.join(build)}\n{made.stderr}"
    run = subprocess.run(
        [TAVERN, *as_run_here(words, tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, f"{document}: {shlex.join(words)}\n{run.stdout}\n{run.stderr}"
    assert "\n  | " not in run.stdout  # no bot crashed: every file it names is there
    if words[0] == "play":
        assert re.search(rf"^turn {TURNS}: ", run.stdout, re.MULTILINE)
    elif words[0] == "match":
        assert re.search(r"^verdict: H1 accepted: ", run.stdout, re.MULTILINE)
    else:
        assert run.stdout.endswith("valid: every game finished with legal moves in time\n")


async def test_the_readme_s_shell_session_needs_nothing_but_bash(arena: Running) -> None:
    """Issue 30, item 18: the README's plain-shell example names no tool a machine may lack
    (it named `nc`): its commands, run by bash as written (on the test arena's port), send what
    is typed and print what the arena answers."""
    block = next(b for b in SHELL_BLOCK.findall((ROOT / "README.md").read_text()) if "$ " in b)
    commands = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
    assert commands and not any(shlex.split(c, comments=True)[0] == "nc" for c in commands)
    script = "\n".join(commands).replace("127.0.0.1/9000", f"127.0.0.1/{arena.tcp_port}")
    shell = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        script,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=True,  # the background `cat` with it: ended together below
    )
    assert shell.stdin is not None and shell.stdout is not None
    try:
        shell.stdin.write(b'{"type": "create-simulation"}\n')
        await shell.stdin.drain()
        async with asyncio.timeout(10):
            answer = orjson.loads(await shell.stdout.readline())
        assert answer["type"] == "ready" and answer["game"] == "tavern"
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        await shell.wait()
