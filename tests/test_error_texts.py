"""The error texts bots match on live in one module, and docs/protocol.md lists exactly them."""

from __future__ import annotations

import re
from pathlib import Path

from server.errors import BotError

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
