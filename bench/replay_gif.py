"""What a replay's GIF costs: ``python bench/replay_gif.py [turns]``.

Draws the animated GIF of a long Tavern game (two house wanderers, every dwarf stepping at
random, ``turns`` turns, default 1000) as the visor does for ``/api/games/{id}/replay.gif``: in
a worker thread, while the event loop runs a 1 ms ticker. Prints the drawing time, the image's
pictures and bytes, and the ticker's worst lateness (how long the loop waited on the drawing
thread, which holds the GIL between Pillow's calls).
"""

from __future__ import annotations

import asyncio
import io
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere

from PIL import GifImagePlugin, Image

from server.games.base import JsonObject, Player
from server.games.tavern.game import TAVERN as TAVERN_GAME
from visor.replay_image import render_gif

TAVERN = TAVERN_GAME.codec_for(TAVERN_GAME.default_settings())


def wandering_game(turns: int) -> JsonObject:
    """A Tavern record of two house wanderers for ``turns`` turns, played through the pure
    rules: a long game in which everything moves (the turn limit is 1000)."""
    wanderer = TAVERN_GAME.house_players["wanderer"]
    players = [Player("a", ("A",)), Player("b", ("B",))]
    rules, rng, choices = TAVERN.rules, random.Random(7), random.Random(8)
    state = rules.initial_state(players)
    played: list[JsonObject] = []
    for number in range(1, turns + 1):
        seat = rules.to_move(state)
        reply = wanderer.reply(state, seat, choices)
        state, _ = rules.apply(state, seat, TAVERN.candidate(reply), rng)
        action = {"actions": reply["actions"]}
        seat_name = TAVERN.seat_names[seat]
        played.append({"number": number, "seat": seat_name, "timedOut": False, "action": action})
    return {
        "id": "longone",
        "game": TAVERN.name,
        "settings": TAVERN.settings(),
        "seed": 7,
        "players": [{"nick": p.nick, "names": list(p.names)} for p in players],
        "turns": played,
    }


async def measure(record: JsonObject) -> tuple[float, float, bytes]:
    """Seconds to draw, the ticker's worst lateness in ms, and the GIF."""
    worst = 0.0
    drawing = True

    async def tick() -> None:
        nonlocal worst
        while drawing:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - before - 0.001)

    ticker = asyncio.create_task(tick())
    started = time.perf_counter()
    gif = await asyncio.to_thread(render_gif, record)
    seconds = time.perf_counter() - started
    drawing = False
    await ticker
    return seconds, 1000 * worst, gif


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    record = wandering_game(turns)
    seconds, worst_ms, gif = asyncio.run(measure(record))
    with Image.open(io.BytesIO(gif)) as image:
        assert isinstance(image, GifImagePlugin.GifImageFile)
        pictures = image.n_frames
    print(f"{turns} turns: {pictures} pictures, {len(gif)} bytes, drawn in {seconds:.2f} s")
    print(f"event loop: worst lateness of a 1 ms ticker while drawing {worst_ms:.1f} ms")


if __name__ == "__main__":
    main()
