"""The error texts bots and pages match on live in one module each, and docs/protocol.md lists
exactly the bots'."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from server.errors import BotError
from visor.errors import PageError

PROTOCOL = Path(__file__).parent.parent / "docs" / "protocol.md"
MESSAGE_ROW = re.compile(r"^\| `([^`]+)` \|", re.MULTILINE)


def documented_errors() -> set[str]:
    """The first column of every table whose header is ``| message | when | then |``."""
    found: set[str] = set()
    for table in re.split(r"\n\n", PROTOCOL.read_text(encoding="utf-8")):
        header, _, rows = table.lstrip().partition("\n")
        if re.fullmatch(r"\| `?message`? \| when \| then \|", header):
            found.update(MESSAGE_ROW.findall(rows))
    return found


def test_docs_list_every_error_a_bot_can_get_and_no_other() -> None:
    documented = documented_errors()
    assert len(documented) > 20  # the tables were found
    assert documented == {str(error) for error in BotError}


def test_no_module_spells_an_error_text_of_its_own() -> None:
    """Every refusal names its text from server.errors (or visor.errors): a text written out
    anywhere else could drift from the one bots match on."""
    texts = {str(error) for error in BotError} | {str(error) for error in PageError}
    root = PROTOCOL.parent.parent
    found = []
    checked = 0
    for folder in ("server", "visor", "tavern_cli"):
        for path in sorted((root / folder).rglob("*.py")):
            if path.name == "errors.py":
                continue
            checked += 1
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in texts:
                    found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    assert checked > 50
    assert found == []
