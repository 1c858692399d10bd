"""The Python SDK and the example bots a bot author copies need nothing of the arena's code
(docs/design.md; lint-imports checks the same from the source): copied beside a bot, with
``bots/sdk.py``, they run where the arena is not installed."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from bots import tavern_dummy
from server.games.tavern import house

ROOT = Path(__file__).parent.parent
STAND_ALONE = ("bots.sdk", "bots.thud", "bots.tavern_dummy")


def test_the_sdk_and_the_example_bots_load_nothing_of_the_arena() -> None:
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


def random_state(rng: random.Random, width: int, height: int) -> dict[str, object]:
    """A Tavern turn's ``state`` with five dwarves a team and the barrels on distinct squares."""
    squares = rng.sample([(x, y) for x in range(width) for y in range(height)], 12)

    def at(square: tuple[int, int]) -> dict[str, int]:
        return {"x": square[0], "y": square[1]}

    return {
        "team1": [{"id": i, "coords": at(squares[i])} for i in range(5)],
        "team2": [{"id": 5 + i, "coords": at(squares[5 + i])} for i in range(5)],
        "barrels": {"team1": {"coords": at(squares[10])}, "team2": {"coords": at(squares[11])}},
    }


def test_the_tavern_dummy_plays_as_the_house_pusher_it_copies() -> None:
    """Its own copy of the pusher's strategy gives the same orders in every position."""
    rng = random.Random(31)
    for _ in range(400):
        width, height = rng.choice([(21, 21), (9, 7), (15, 11)])
        state = random_state(rng, width, height)
        team = rng.choice(["team1", "team2"])
        mine = tavern_dummy.choose_actions(tavern_dummy.view_of_wire(state, team, width, height))
        theirs = house.choose_actions(house.view_of_wire(state, team, width, height))
        assert mine == theirs
