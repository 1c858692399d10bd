"""Golden files: the exact bytes of a wire message, kept in tests/golden/.

Run the tests with ``UPDATE_GOLDEN=1`` to rewrite the files after a deliberate change, then
review the diff: the files are the protocol's contract with bots.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from server.protocol import encode

GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, message: dict[str, Any]) -> None:
    path = GOLDEN / f"{name}.json"
    line = encode(message)
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(line)
    assert path.exists(), f"no golden file {path}; run with UPDATE_GOLDEN=1 to create it"
    assert line == path.read_bytes(), f"{name} differs from {path}"
