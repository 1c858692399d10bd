"""A recorded game as an animated GIF, drawn with Pillow from the positions of ``server.replay``.

``GET /api/games/{id}/replay.gif``. Each picture is one position the pure rules recomputed from
the record's seed and turns (``frames``), drawn as the visor's board is: home rows, barrels and
dwarves in the Tavern, the octagon, dwarfs, trolls and the Thudstone in Thud, the last turn as
lines. The cost is bounded, whatever the game:

* at most ``MAX_FRAMES`` pictures: a longer game shows every k-th position (always its first
  and its last), and the picture's header says so;
* ``CELL`` pixels a square: a 21 x 21 Tavern is 370 x 394 pixels, in a 16-colour palette;
* drawn in a worker thread, one image at a time (``asyncio.Semaphore``), so the event loop goes
  on serving games; a finished game's image never changes and the last ``CACHED`` are kept.
"""

from __future__ import annotations

import asyncio
import io
import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from aiohttp import web
from PIL import Image, ImageDraw, ImageFont

from server.games.base import AnyCodec, JsonObject
from server.records import Records
from server.replay import DamagedRecord, frames, game_of

MAX_FRAMES = 300
CELL = 16
MARGIN = 8
HEADER = 24
CACHED = 16
TURN_MS = {"tavern": 120, "thud": 350}
LAST_FRAME_MS = 3000

# The palette: an index for each colour the boards use (the visor's colours, js/games.js).
COLOURS = {
    "background": (27, 20, 16),
    "ink": (34, 21, 11),
    "text": (243, 232, 212),
    "muted": (191, 169, 138),
    "floor": (138, 98, 64),
    "floor_dark": (128, 89, 58),
    "team1": (217, 87, 59),
    "team2": (232, 182, 60),
    "barrel": (154, 99, 48),
    "light": (230, 213, 173),
    "dark": (205, 181, 135),
    "dwarf": (74, 134, 224),
    "troll": (90, 168, 69),
    "stone": (154, 154, 158),
    "line": (255, 248, 230),
    "kill": (216, 54, 43),
}
INDEX = {name: index for index, name in enumerate(COLOURS)}
PALETTE = [channel for colour in COLOURS.values() for channel in colour]


def sampling_step(count: int, most: int = MAX_FRAMES) -> int:
    """Draw every k-th of ``count`` positions (and the last), so that at most ``most`` are."""
    return 1 if count <= most else math.ceil((count - 1) / (most - 1))


def render_gif(record: JsonObject) -> bytes:
    """The whole game as an animated GIF (CPU-bound: run it in a worker thread)."""
    game = game_of(record)
    width, height = game.board_size()
    size = (2 * MARGIN + width * CELL, HEADER + MARGIN + height * CELL)
    turns = record["turns"]
    last = turns[-1]["number"] if turns else 0
    step = sampling_step(last + 1)
    board = game.describe()
    pictures: list[Image.Image] = []
    durations: list[int] = []
    for frame in frames(record):
        if frame.turn % step and frame.turn != last:
            continue
        picture = Image.new("P", size, INDEX["background"])
        picture.putpalette(PALETTE)
        draw = ImageDraw.Draw(picture)
        state = game.state_to_wire(frame.state)
        events = game.events_to_wire(frame.events)
        if record["game"] == "thud":
            _draw_thud(draw, board, state, events)
        else:
            _draw_tavern(draw, board, state, events)
        header = _header(record, game, frame.turn, frame.state, step)
        draw.text((MARGIN, 6), header, fill=INDEX["text"], font=FONT)
        pictures.append(picture)
        durations.append(TURN_MS.get(record["game"], 200) * step)
    if not pictures:
        raise DamagedRecord(f"game {record.get('id')}: no position to draw")
    durations[-1] = LAST_FRAME_MS
    out = io.BytesIO()
    pictures[0].save(
        out,
        format="GIF",
        save_all=True,
        append_images=pictures[1:],
        duration=durations,
        loop=0,
        optimize=False,
    )
    return out.getvalue()


FONT = ImageFont.load_default()


def _header(record: JsonObject, game: AnyCodec, turn: int, state: Any, step: int) -> str:
    scores = game.scores(state)
    unit = "ply" if record["game"] == "thud" else "turn"
    last = record["turns"][-1]["number"] if record["turns"] else 0
    text = f"{record['id']}  {unit} {turn}/{last}  " + " - ".join(
        f"{name} {value}" for name, value in scores.items()
    )
    if step > 1:
        text += f"  (every {step}th {unit})"
    return text


def _corner(x: int, y: int) -> tuple[int, int]:
    return MARGIN + x * CELL, HEADER + y * CELL


def _centre(point: Sequence[int]) -> tuple[int, int]:
    left, top = _corner(point[0], point[1])
    return left + CELL // 2, top + CELL // 2


def _draw_tavern(
    draw: ImageDraw.ImageDraw, board: JsonObject, state: JsonObject, events: list[JsonObject]
) -> None:
    width, height = board["width"], board["height"]
    for y in range(height):
        for x in range(width):
            left, top = _corner(x, y)
            home = "team2" if y == 0 else "team1" if y == height - 1 else None
            shade = home or ("floor" if (x + y) % 2 else "floor_dark")
            draw.rectangle((left, top, left + CELL - 1, top + CELL - 1), fill=INDEX[shade])
    for event in events:  # the turn that led here, under the pieces
        start, end = event.get("from"), event.get("to")
        if start is None or end is None or start == end:
            continue
        colour = INDEX["kill"] if event["kind"] == "thrown" else INDEX["line"]
        draw.line(
            (_centre((start["x"], start["y"])), _centre((end["x"], end["y"]))), colour, width=2
        )
    for team in ("team1", "team2"):
        barrel = state["barrels"][team]["coords"]
        left, top = _corner(barrel["x"], barrel["y"])
        draw.ellipse((left + 2, top + 1, left + CELL - 3, top + CELL - 2), INDEX["barrel"])
        draw.rectangle((left + 3, top + 6, left + CELL - 4, top + 9), fill=INDEX[team])
        draw.ellipse(
            (left + 2, top + 1, left + CELL - 3, top + CELL - 2), outline=INDEX["ink"], width=1
        )
        for dwarf in state[team]:
            left, top = _corner(dwarf["coords"]["x"], dwarf["coords"]["y"])
            draw.ellipse(
                (left + 2, top + 2, left + CELL - 3, top + CELL - 3),
                fill=INDEX[team],
                outline=INDEX["ink"],
            )


def _draw_thud(
    draw: ImageDraw.ImageDraw, board: JsonObject, state: JsonObject, events: list[JsonObject]
) -> None:
    for x, y in board["squares"]:
        left, top = _corner(x, y)
        draw.rectangle(
            (left, top, left + CELL - 1, top + CELL - 1),
            fill=INDEX["light" if (x + y) % 2 == 0 else "dark"],
        )
    left, top = _corner(*board["thudstone"])
    draw.ellipse((left + 2, top + 2, left + CELL - 3, top + CELL - 3), fill=INDEX["stone"])
    for event in events:  # the move that led here, under the pieces
        if event["type"] == "move":
            draw.line((_centre(event["from"]), _centre(event["to"])), INDEX["team2"], width=2)
    for x, y in state["dwarfs"]:
        left, top = _corner(x, y)
        draw.ellipse(
            (left + 3, top + 3, left + CELL - 4, top + CELL - 4),
            fill=INDEX["dwarf"],
            outline=INDEX["ink"],
        )
    for x, y in state["trolls"]:
        left, top = _corner(x, y)
        draw.rectangle(
            (left + 1, top + 1, left + CELL - 2, top + CELL - 2),
            fill=INDEX["troll"],
            outline=INDEX["ink"],
        )
    for event in events:
        if event["type"] == "killed":
            for x, y in event["squares"]:
                cx, cy = _centre((x, y))
                draw.line((cx - 4, cy - 4, cx + 4, cy + 4), INDEX["kill"], width=2)
                draw.line((cx - 4, cy + 4, cx + 4, cy - 4), INDEX["kill"], width=2)


class ReplayImages:
    """The GIFs of recorded games: one drawn at a time, the last few finished ones kept."""

    def __init__(self, records: Records) -> None:
        self.records = records
        self._drawing = asyncio.Semaphore(1)
        self._cache: OrderedDict[str, bytes] = OrderedDict()

    async def gif(self, game_id: str) -> bytes | None:
        """The game's GIF, or None if no such game is recorded; raises ``DamagedRecord``."""
        cached = self._cache.get(game_id)
        if cached is not None:
            self._cache.move_to_end(game_id)
            return cached
        async with self._drawing:
            cached = self._cache.get(game_id)  # drawn while this request waited
            if cached is not None:
                return cached
            record = await asyncio.to_thread(self.records.game, game_id)
            if record is None:
                return None
            image = await asyncio.to_thread(render_gif, record)
            if record["status"] != "playing":  # a game still going gets new turns
                self._cache[game_id] = image
                while len(self._cache) > CACHED:
                    self._cache.popitem(last=False)
            return image


IMAGES = web.AppKey("replay_images", ReplayImages)


async def replay_gif(request: web.Request) -> web.StreamResponse:
    game_id = request.match_info["game_id"]
    try:
        image = await request.app[IMAGES].gif(game_id)
    except DamagedRecord as error:
        return web.json_response({"error": f"this record cannot be read back: {error}"}, status=409)
    if image is None:
        return web.json_response({"error": "no recorded game with this id"}, status=404)
    return web.Response(body=image, content_type="image/gif")


def add_routes(app: web.Application, records: Records) -> None:
    app[IMAGES] = ReplayImages(records)
    app.router.add_get("/api/games/{game_id}/replay.gif", replay_gif)
