"""Replays as animated GIFs (visor/replay_image.py): a long game is bounded, and every picture
is a position the pure rules recomputed."""

from __future__ import annotations

import io
import time

from PIL import GifImagePlugin, Image

from bench.replay_gif import TAVERN, wandering_game
from server.games.picture import CELL, HEADER, MARGIN
from server.replay import frames
from visor.replay_image import MAX_FRAMES, render_gif, sampling_step

TEAM1_RED = (217, 87, 59)


def test_the_sampling_keeps_every_position_of_a_short_game_and_bounds_a_long_one() -> None:
    assert sampling_step(MAX_FRAMES) == 1
    assert sampling_step(1001) == 4  # 0, 4, ... 1000: 251 pictures
    for count in (MAX_FRAMES + 1, 1001, 5000):
        step = sampling_step(count)
        assert len(range(0, count - 1, step)) + 1 <= MAX_FRAMES


def test_a_long_game_is_drawn_within_the_bound() -> None:
    record = wandering_game(1000)
    assert sum(1 for _ in frames(record)) == 1001
    started = time.perf_counter()
    gif = render_gif(record)
    seconds = time.perf_counter() - started
    with Image.open(io.BytesIO(gif)) as image:
        assert isinstance(image, GifImagePlugin.GifImageFile)
        assert image.n_frames == 251
        width, height = TAVERN.view.board_size()
        assert image.size == (2 * MARGIN + width * CELL, HEADER + MARGIN + height * CELL)
        image.seek(250)  # the last position: team1's dwarves where the rules put them
        rgb = image.convert("RGB")
        last = list(frames(record))[-1].state
        for dwarf in last.dwarves[:5]:
            x, y = dwarf.coords.x, dwarf.coords.y
            centre = (MARGIN + x * CELL + CELL // 2, HEADER + y * CELL + CELL // 2)
            assert rgb.getpixel(centre) == TEAM1_RED
    assert len(gif) < 2_000_000
    print(f"1000-turn Tavern game: {seconds:.2f} s, {len(gif)} bytes")
    assert seconds < 20  # a bound on a busy shared machine; measured figures: docs
