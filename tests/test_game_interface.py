"""What a new game implements besides its rules: its codec in three parts, the wire
(``server.games.base.Codec``), the text (``server.games.text.GameText``) and the picture
(``server.games.picture``: ``BoardView``, the board of one set of settings as viewers see it, and
``Picture``, its replay image), at most 20 abstract methods in all, each part with one job."""

from __future__ import annotations

from server.games import GAMES
from server.games.base import Codec, Player
from server.games.picture import BoardView, Picture
from server.games.text import GameText

PARTS: dict[str, tuple[type, ...]] = {
    "wire": (Codec,),
    "text": (GameText,),
    "picture": (BoardView, Picture),
}
MOST_ABSTRACT_METHODS = 20


def _abstract(part: type) -> frozenset[str]:
    return frozenset(getattr(part, "__abstractmethods__", frozenset()))


def _methods(part: type) -> set[str]:
    """The public methods a part declares itself (not those of ``object`` or ``ABC``)."""
    return {
        name
        for name, value in vars(part).items()
        if name[0] != "_" and (callable(value) or isinstance(value, classmethod | staticmethod))
    }


def test_a_new_game_implements_at_most_20_abstract_methods() -> None:
    counts = {part.__name__: len(_abstract(part)) for kinds in PARTS.values() for part in kinds}
    assert sum(counts.values()) <= MOST_ABSTRACT_METHODS, counts


def test_each_part_has_its_own_methods_and_the_wire_none_of_the_others() -> None:
    owners: dict[str, list[str]] = {}
    for kinds in PARTS.values():
        for part in kinds:
            for name in _methods(part):
                owners.setdefault(name, []).append(part.__name__)
    shared = {name: parts for name, parts in owners.items() if len(parts) > 1}
    assert not shared, f"methods in more than one part: {shared}"
    wire = _methods(Codec)
    assert not wire & {"render_text", "legend_text", "events_text", "end_text", "describe"}
    assert "board_size" not in wire


def test_each_game_s_codec_has_its_text_and_its_view() -> None:
    for game in GAMES.values():
        codec = game.codec_for(game.default_settings())
        assert isinstance(codec.text, GameText), game.name
        assert isinstance(codec.view, BoardView), game.name
        assert isinstance(game.picture, Picture), game.name
        players = [Player(f"p{n}") for n in range(len(codec.seat_names))]
        state = codec.rules.initial_state(players)
        width, height = codec.view.board_size()
        rows = codec.text.render_text(state).split("\n")
        assert len(rows) == height and max(len(row) for row in rows) <= width, game.name
        assert codec.text.legend_text(state) and codec.text.events_text([]) == [], game.name
        board = codec.view.describe()
        assert (board["width"], board["height"]) == (width, height), game.name
