"""A recorded game as an animated GIF, drawn with Pillow from the positions of ``server.replay``.

``GET /api/games/{id}/replay.gif``. Each picture is one position the pure rules recomputed from
the record's seed and turns (``frames``), drawn by its game's ``Picture`` as the visor's board
is (home rows, barrels and dwarves in the Tavern, the octagon, dwarfs, trolls and the Thudstone
in Thud, the last turn as lines), for as long as the game says a turn lasts. The cost is
bounded, whatever the game:

* at most ``MAX_FRAMES`` pictures: a longer game shows every k-th position (always its first
  and its last), and the picture's header says so;
* ``CELL`` pixels a square: a 21 x 21 Tavern is 370 x 394 pixels, in a palette of a dozen colours;
* drawn in a worker thread, one image at a time (``asyncio.Semaphore``), so the event loop goes
  on serving games; a finished game's image never changes and the last ``CACHED`` are kept.
"""

from __future__ import annotations

import asyncio
import io
import math
from collections import OrderedDict
from typing import Any

from aiohttp import web
from PIL import Image, ImageDraw, ImageFont

from server.games import GAMES
from server.games.base import AnyCodec, JsonObject
from server.games.picture import CELL, COLOURS, HEADER, MARGIN, Canvas
from server.records import Records
from server.replay import DamagedRecord, frames, game_of

MAX_FRAMES = 300
CACHED = 16
LAST_FRAME_MS = 3000


def sampling_step(count: int, most: int = MAX_FRAMES) -> int:
    """Draw every k-th of ``count`` positions (and the last), so that at most ``most`` are."""
    return 1 if count <= most else math.ceil((count - 1) / (most - 1))


def render_gif(record: JsonObject) -> bytes:
    """The whole game as an animated GIF (CPU-bound: run it in a worker thread)."""
    game = game_of(record)
    picture = GAMES[record["game"]].picture
    colours = {**COLOURS, **picture.colours}
    palette = {name: index for index, name in enumerate(colours)}
    channels = [channel for colour in colours.values() for channel in colour]
    width, height = game.view.board_size()
    size = (2 * MARGIN + width * CELL, HEADER + MARGIN + height * CELL)
    turns = record["turns"]
    last = turns[-1]["number"] if turns else 0
    step = sampling_step(last + 1)
    board = game.view.describe()
    images: list[Image.Image] = []
    durations: list[int] = []
    for frame in frames(record):
        if frame.turn % step and frame.turn != last:
            continue
        image = Image.new("P", size, palette["background"])
        image.putpalette(channels)
        draw = ImageDraw.Draw(image)
        state = game.state_to_wire(frame.state)
        events = game.events_to_wire(frame.events)
        picture.draw(Canvas(draw, palette), board, state, events)
        header = _header(record, game, picture.turn_word, frame.turn, frame.state, step)
        draw.text((MARGIN, 6), header, fill=palette["text"], font=FONT)
        images.append(image)
        durations.append(picture.turn_ms * step)
    if not images:
        raise DamagedRecord(f"game {record.get('id')}: no position to draw")
    durations[-1] = LAST_FRAME_MS
    out = io.BytesIO()
    images[0].save(
        out,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=durations,
        loop=0,
        optimize=False,
    )
    return out.getvalue()


FONT = ImageFont.load_default()


def _header(record: JsonObject, game: AnyCodec, unit: str, turn: int, state: Any, step: int) -> str:
    scores = game.scores(state)
    last = record["turns"][-1]["number"] if record["turns"] else 0
    text = f"{record['id']}  {unit} {turn}/{last}  " + " - ".join(
        f"{name} {value}" for name, value in scores.items()
    )
    if step > 1:
        text += f"  (every {step}th {unit})"
    return text


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
