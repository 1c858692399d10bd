"""The Python SDK a bot author copies needs nothing of the arena's code (docs/design.md;
lint-imports checks the same from the source): copied beside a bot, it runs where the arena is
not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
STAND_ALONE = ("bots.sdk", "bots.thud")


def test_the_sdk_loads_nothing_of_the_arena() -> None:
    code = (
        "import sys\n"
        f"for name in {STAND_ALONE!r}: __import__(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('server', 'visor', 'tavern_cli')))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"
