"""House players for Thud: a dwarf and a troll that play real strategy, and a random player.

A player is a policy: a pure rules ``State`` in, a legal ``Action`` out, with a seeded
``random.Random`` for tie-breaks, so every game between house players replays from its seeds.

Both strategic players look one ply ahead with the arena's own rules. They rank every legal
move cheaply (captures first, then safety and formation), then check the best few exactly
against the opponent's strongest reply:

* The dwarf takes trolls when it can (4 points each), never walks where a troll could land
  next to it, and otherwise closes in on the trolls in lines, since a line is what lets a dwarf
  hurl: it prefers squares just outside a troll's reach that line up with other dwarfs.
* The troll kills as many dwarfs as it can, never ends a move where a dwarf line could hurl
  onto it, and otherwise walks toward the thickest group of dwarfs, keeping trolls together so
  that they can shove.

Both accept peace (declare) once the opponent has declared and they are not behind.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from server.games.base import HousePlayer, JsonObject
from server.games.thud import rules
from server.games.thud.board import NEAR, NEIGHBOURS, cell_of
from server.games.thud.codec import ThudCodec
from server.games.thud.danger import danger_squares
from server.games.thud.movegen import legal_moves
from server.games.thud.pieces import (
    DWARF,
    DWARF_PIECE,
    MAX_PLIES,
    SIDES,
    TROLL,
    TROLL_PIECE,
    Action,
    Move,
    State,
    initial_state,
    score,
    side_to_move,
    state_from_position,
)

Policy = Callable[[State, random.Random], Action]
Square = tuple[int, int]
CANDIDATES = 12  # moves checked exactly against the opponent's best reply
_WIRE = ThudCodec(rules.ThudRules())  # how a reply is written


def random_player(state: State, rng: random.Random) -> Action:
    """Uniformly random among the legal moves; never declares."""
    return Action(rng.choice(legal_moves(state)))


def dwarf_player(state: State, rng: random.Random) -> Action:
    moves = legal_moves(state)
    danger = danger_squares(state, DWARF)

    def rough(move: Move) -> float:
        value = 100.0 * len(move.killed)
        if move.end in danger and not move.killed:
            value -= 40
        reach = _nearest(move.end, state.trolls)
        value -= abs(reach - 3) * 2  # just outside a troll's reach
        value += 3 * _neighbours(state.cells, move.end, move.start, DWARF_PIECE)
        return value + rng.random()

    def exact(move: Move) -> float:
        after, _ = rules.apply(state, Action(move))
        if after.end_reason is not None:
            return _final_value(after, DWARF)
        reply_kills = max((len(m.killed) for m in legal_moves(after)), default=0)
        return 4 * len(move.killed) - reply_kills + rough(move) / 1000

    return Action(_best(moves, rough, exact), _peace(state, DWARF))


def troll_player(state: State, rng: random.Random) -> Action:
    moves = legal_moves(state)
    danger = danger_squares(state, TROLL)

    def rough(move: Move) -> float:
        value = 100.0 * len(move.killed)
        if move.end in danger:
            value -= 60
        value -= 2 * _nearest(move.end, state.dwarfs)
        value += 4 * _crowd(state.cells, move.end)
        value += _neighbours(state.cells, move.end, move.start, TROLL_PIECE)
        return value + rng.random()

    def exact(move: Move) -> float:
        after, _ = rules.apply(state, Action(move))
        if after.end_reason is not None:
            return _final_value(after, TROLL)
        hurls = any(m.kind == "hurl" for m in legal_moves(after))
        return len(move.killed) - 4 * hurls + rough(move) / 1000

    return Action(_best(moves, rough, exact), _peace(state, TROLL))


@dataclass(frozen=True, slots=True)
class ThudHousePlayer(HousePlayer):
    policy: Policy

    def reply(self, state: State, seat: int, rng: random.Random) -> JsonObject:
        return {"type": "player-turn", **_WIRE.action_to_wire(self.policy(state, rng))}

    def reply_to_wire(
        self, message: JsonObject, info: JsonObject, rng: random.Random
    ) -> JsonObject:
        return self.reply(state_from_wire(message["state"]), SIDES.index(info["side"]), rng)


PLAYERS: dict[str, HousePlayer] = {
    player.name: player
    for player in (
        ThudHousePlayer(
            "dwarf", "hurls at trolls, keeps out of reach, forms lines", (DWARF,), dwarf_player
        ),
        ThudHousePlayer(
            "troll", "kills the most dwarfs, avoids hurls, stays together", (TROLL,), troll_player
        ),
        ThudHousePlayer("random", "a uniformly random legal move", SIDES, random_player),
    )
}


def _best(
    moves: list[Move], rough: Callable[[Move], float], exact: Callable[[Move], float]
) -> Move:
    shortlist = sorted(moves, key=rough, reverse=True)[:CANDIDATES]
    return max(shortlist, key=exact)


def _final_value(state: State, side: str) -> float:
    standing = score(state)
    lead = standing.dwarfs - standing.trolls if side == DWARF else standing.trolls - standing.dwarfs
    return 1000.0 * lead


def _peace(state: State, side: str) -> bool | None:
    """Declare once the opponent has, if we are not behind."""
    opponent_declared = state.declared[1 if side == DWARF else 0]
    if not opponent_declared:
        return None
    standing = score(state)
    lead = standing.dwarfs - standing.trolls if side == DWARF else standing.trolls - standing.dwarfs
    return lead >= 0


def _nearest(square: Square, pieces: tuple[Square, ...]) -> int:
    x, y = square
    return min((max(abs(x - px), abs(y - py)) for px, py in pieces), default=15)


def _crowd(cells: bytes, square: Square) -> int:
    """Dwarfs within two squares: what a troll landing nearby could threaten next."""
    return sum(1 for cell in NEAR[cell_of(square)] if cells[cell] == DWARF_PIECE)


def _neighbours(cells: bytes, square: Square, leaving: Square, piece: int) -> int:
    """Pieces of one kind next to ``square``, not counting the one that leaves ``leaving``.

    For dwarfs these are the starts of hurling lines; for trolls, of shoving lines.
    """
    left = cell_of(leaving)
    return sum(1 for cell in NEIGHBOURS[cell_of(square)] if cell != left and cells[cell] == piece)


def play_game(dwarf: Policy, troll: Policy, seed: int, max_plies: int = MAX_PLIES) -> State:
    """A whole game between two policies in memory (for tests and benchmarks)."""
    rng = random.Random(seed)
    state = initial_state()
    while state.end_reason is None and state.ply <= max_plies:
        policy = dwarf if side_to_move(state) == DWARF else troll
        state, _ = rules.apply(state, policy(state, rng))
    return state


def state_from_wire(state: JsonObject) -> State:
    """The position of a turn message's ``state``, as the rules keep it (for players that get
    their turns over the network)."""
    return state_from_position(
        state["dwarfs"],
        state["trolls"],
        ply=state["ply"],
        dwarf_slots=state.get("dwarfSlots"),
        troll_slots=state.get("trollSlots"),
        declared=(state["declared"][DWARF], state["declared"][TROLL]),
    )
