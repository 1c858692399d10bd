"""Thud for Python bots: what a king-of-the-hill client asks its controller, from a turn message.

    async def main():
        final = await play_thud("127.0.0.1", 9000, None, "dwarf", "me", choose)

    def choose(turn: ThudTurn) -> dict:
        killing = turn.killing_moves()
        move = killing[0] if killing else turn.moves()[0]
        return turn.reply(move)

Every question is answered from the state the arena sends (it includes every legal move), so a
bot needs no rules of its own. Bots that search can turn a turn into the arena's own pure rules
state with ``rules_state`` and look ahead with ``server.games.thud.rules``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bots.sdk import ArenaClient, JsonObject
from server.games.thud.pieces import DWARF, TROLL, State, state_from_position

Square = tuple[int, int]


@dataclass(frozen=True, slots=True)
class ThudMove:
    """A legal move as the arena sends it."""

    start: Square
    end: Square
    kind: str  # "walk", "hurl" or "shove"
    kills: int


class ThudTurn:
    """One turn of Thud from the side on move."""

    def __init__(self, state: JsonObject) -> None:
        self.state = state
        self.ply: int = state["ply"]
        self.side: str = state["side"]
        self.dwarfs: list[Square] = [(x, y) for x, y in state["dwarfs"]]
        self.trolls: list[Square] = [(x, y) for x, y in state["trolls"]]
        self.score: dict[str, int] = state["score"]
        self.declared: dict[str, bool] = state["declared"]
        self.previous_move: JsonObject | None = state["previousMove"]
        self._moves = [
            ThudMove((m["from"][0], m["from"][1]), (m["to"][0], m["to"][1]), m["kind"], m["kills"])
            for m in state["moves"]
        ]

    @property
    def opponent(self) -> str:
        return TROLL if self.side == DWARF else DWARF

    def pieces(self) -> list[Square]:
        """The side on move's pieces, in the engine's order."""
        return self.dwarfs if self.side == DWARF else self.trolls

    def scores(self) -> dict[str, int]:
        return dict(self.score)

    def moves(self) -> list[ThudMove]:
        """Every legal move, pieces in engine order and each piece's moves in engine order."""
        return list(self._moves)

    def killing_moves(self) -> list[ThudMove]:
        return [move for move in self._moves if move.kills > 0]

    def moves_from(self, square: Square) -> list[ThudMove]:
        return [move for move in self._moves if move.start == square]

    def kills(self, start: Square, end: Square) -> int | None:
        """How many opponents the move would kill, or None if it is not legal."""
        for move in self._moves:
            if move.start == start and move.end == end:
                return move.kills
        return None

    def opponent_declared(self) -> bool:
        return self.declared[self.opponent]

    def reply(self, move: ThudMove, declare: bool | None = None) -> JsonObject:
        """The ``player-turn`` message that plays ``move`` (and sets the peace flag if given)."""
        message: JsonObject = {
            "type": "player-turn",
            "move": {"from": list(move.start), "to": list(move.end)},
        }
        if declare is not None:
            message["declare"] = declare
        return message

    def rules_state(self) -> State:
        """The position as the arena's pure rules state, for bots that look ahead."""
        return state_from_position(
            self.dwarfs,
            self.trolls,
            ply=self.ply,
            declared=(self.declared[DWARF], self.declared[TROLL]),
        )


async def play_thud(
    host: str,
    port: int,
    simulation_id: str | None,
    side: str | None,
    nick: str,
    choose: Callable[[ThudTurn], JsonObject],
    seed: int | None = None,
) -> JsonObject:
    """Join a Thud simulation (a random one when the id is None) and play it to the end."""
    async with await ArenaClient.connect(host, port) as client:
        fields: dict[str, Any] = {}
        if side is not None:
            fields["side"] = side
        if seed is not None:
            fields["seed"] = seed
        await client.join(simulation_id, nick=nick, game="thud", **fields)
        return await client.play(lambda message: choose(ThudTurn(message["state"])))
