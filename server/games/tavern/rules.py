"""The rules of Dwarven Tavern, as the original 2013 Node.js server plays them.

Everything here is pure: a ``State`` goes in, a new ``State`` and the events it caused come out,
and the only randomness is the ``RandomSource`` the caller passes. The mechanics copy the
original ``Simulation.js`` move for move, because bots were written against it: orders are
applied one after the other in the order sent, pushes recurse, each thrown dwarf draws one
``randrange(3)`` before anyone knows whether the throw is blocked (pre-order), the throw clamps
are lopsided (a dwarf can be thrown onto row 0 but never onto row ``height-1`` or the side
columns, bug B11, kept because it is the game), the score is checked once after all orders,
``current_turn`` survives a restart and the non-scorer moves after a point (so an own goal gives
the same team three turns in a row, B5, kept). The arena adds one rule: ``turn_limit`` ends a
game on points (the original could run forever).

Bugs of the original fixed here:

* B4: a team may only order its own dwarves, each at most once per turn, and only on its turn
  (``check_orders``). ``play_orders`` keeps the original's permissive mechanics.
* B6: when both teams score in the same turn both points count; if both reach
  ``points_to_win`` the game is a draw instead of a silent win for team2.
* B12: the number of dwarves comes from the settings (``botsPerPlayer``), not from how many
  names a bot sends.
* B13: no two pieces ever share a cell. The original let a barrel pushed onto a dwarf standing
  on row 0 or row ``height-1`` overwrite it, leaving a "ghost" that later erased whatever stood
  on its cell. Here a barrel throws such a dwarf exactly as on any other row: one more random
  draw, and if the dwarf cannot be thrown the barrel (and its pusher) stay put, so that point
  is not scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from server.errors import BotError
from server.games.base import ActionRejected, Outcome, Player, RandomSource, Rules
from server.games.tavern.ends import TavernEnd
from server.games.tavern.mechanics import move_pieces
from server.games.tavern.pieces import (
    BarrelMoved,
    BoardReset,
    Coords,
    Dwarf,
    DwarfHit,
    DwarfMoved,
    Event,
    MessageType,
    Order,
    PointScored,
    Position,
    Settings,
    State,
    new_state,
)


def initial_state(settings: Settings, names: tuple[Sequence[str], Sequence[str]]) -> State:
    """The starting position; ids run 1.. over team1 then team2, as the original numbers them.

    A team has ``len(settings.dwarf_starts[team])`` dwarves whatever it sends (B12 fixed);
    ``names`` only names them, missing ones default to ``"Dwarf <n>"`` and extras are ignored.
    """
    dwarves: list[Dwarf] = []
    for team, starts in enumerate(settings.dwarf_starts):
        team_names = names[team]
        for index, start in enumerate(starts):
            name = team_names[index] if index < len(team_names) else f"Dwarf {index + 1}"
            dwarves.append(Dwarf(len(dwarves) + 1, team, name, start))
    return State(
        settings=settings,
        dwarves=tuple(dwarves),
        barrels=settings.barrel_starts,
        scores=(0, 0),
        current_turn=0,
        to_move=0,
        outcome=None,
    )


def pass_orders() -> tuple[Order, ...]:
    """What a timed-out team plays: no orders. Only the arena plays it; bots cannot."""
    return ()


def check_orders(state: State, team: int, orders: Sequence[Order]) -> tuple[Order, ...]:
    """A bot's turn as ``apply_turn`` may play it; rejects what the original would have played
    although it breaks the rules (B4)."""
    if state.outcome is not None:
        raise ActionRejected(BotError.NOT_YOUR_TURN, "the game is over")
    if team != state.to_move:
        raise ActionRejected(BotError.NOT_YOUR_TURN, f"team{state.to_move + 1} moves now")
    if not orders:
        raise ActionRejected(BotError.INVALID_TURN, "a turn needs at least one action")
    dwarves = state.dwarves
    count = len(dwarves)
    own_ids: set[int] | None = None
    seen: set[int] = set()
    for order in orders:
        bot_id = order.bot_id
        # Dwarf n is at index n - 1 (``initial_state``, and every position read); only a
        # position built by hand makes the set of the team's ids.
        index = bot_id - 1
        if 0 <= index < count and dwarves[index].id == bot_id:
            mine = dwarves[index].team == team
        else:
            if own_ids is None:
                own_ids = {dwarf.id for dwarf in dwarves if dwarf.team == team}
            mine = bot_id in own_ids
        if not mine:
            raise ActionRejected(BotError.INVALID_TURN, f"dwarf {bot_id} is not one of yours")
        if bot_id in seen:
            raise ActionRejected(BotError.INVALID_TURN, f"dwarf {bot_id} has more than one action")
        seen.add(bot_id)
    return tuple(orders)


def apply_turn(
    state: State, team: int, orders: Sequence[Order], rng: RandomSource
) -> tuple[State, list[Event]]:
    """Play one team's turn: the moves, the score check, then the end or the next team.

    ``orders`` are checked (``check_orders``) and not checked again; empty ``orders`` is the
    timed-out pass (``pass_orders``): nothing moves but it counts as a turn.
    """
    settings = state.settings
    dwarves, barrels, events = move_pieces(state, orders, rng)
    scorers = _scoring_teams(barrels, settings.height)
    scores = state.scores
    if scorers:
        scores = (scores[0] + (0 in scorers), scores[1] + (1 in scorers))
    current_turn = state.current_turn + 1
    winners = (
        [scorer for scorer in scorers if scores[scorer] >= settings.points_to_win]
        if (scorers)
        else []
    )
    end: Outcome | None = None
    if len(winners) == 2:
        end = Outcome(None, TavernEnd.POINTS_TO_WIN_BY_BOTH)
    elif winners:
        end = Outcome(winners[0], TavernEnd.POINTS_TO_WIN)
    elif current_turn >= settings.turn_limit:
        leader = None if scores[0] == scores[1] else int(scores[1] > scores[0])
        end = Outcome(leader, TavernEnd.TURN_LIMIT)
    # The original hands the next turn to the non-scorer; when both scored, team1 counts as the
    # scorer, so team2 moves. Otherwise the parity of the turn count decides.
    to_move = current_turn % 2
    if scorers:
        position = Position(dwarves, barrels)
        events.extend(PointScored(scorer, scores, position) for scorer in scorers)
        to_move = int(0 in scorers)
        if end is None:
            # The board restarts after a point, unless the game is over: a finished game keeps
            # the scoring position, which is what the end messages show.
            dwarves, barrels = _starting_dwarves(state), settings.barrel_starts
            events.append(BoardReset())
    return new_state(settings, dwarves, barrels, scores, current_turn, to_move, end), events


def scoring_teams(state: State) -> tuple[int, ...]:
    """The teams scoring in this position: team1 when team2's barrel is on the bottom row,
    team2 when team1's barrel is on the top row (checked once, after all orders)."""
    return _scoring_teams(state.barrels, state.settings.height)


def _scoring_teams(barrels: tuple[Coords, Coords], height: int) -> tuple[int, ...]:
    """``scoring_teams`` on the barrels alone, so a turn needs no ``State`` to check it."""
    team1_barrel, team2_barrel = barrels
    team2_scores = team1_barrel.y == 0
    if team2_barrel.y == height - 1:
        return (0, 1) if team2_scores else (0,)
    return (1,) if team2_scores else ()


def _starting_dwarves(state: State) -> tuple[Dwarf, ...]:
    """Every dwarf back on its start, keeping ids and names; the n-th dwarf of a team gets its
    team's n-th start."""
    count_by_team = [0, 0]
    dwarves: list[Dwarf] = []
    for dwarf in state.dwarves:
        start = state.settings.dwarf_starts[dwarf.team][count_by_team[dwarf.team]]
        count_by_team[dwarf.team] += 1
        moved = dwarf.coords != start
        dwarves.append(Dwarf(dwarf.id, dwarf.team, dwarf.name, start) if moved else dwarf)
    return tuple(dwarves)


def play_orders(
    state: State, orders: Sequence[Order], rng: RandomSource
) -> tuple[State, list[Event]]:
    """The bare mechanics of the original (SPEC 7): each order in turn, on any dwarf.

    No validation, no score check, no turn counting; orders naming no dwarf are skipped, as
    are passes. Only the pieces change in the returned state.
    """
    dwarves, barrels, events = move_pieces(state, orders, rng)
    return replace(state, dwarves=dwarves, barrels=barrels), events


def event_text(event: Event) -> tuple[int, str]:
    """The original's visor message for an event, as ``(type, text)``.

    Events carry the dwarf's name so no state is needed. The original never logged points or
    restarts; their texts here use its unused ``SCORE`` type, so a layer reproducing the
    original's messages keeps only ``MoveEvent`` instances.
    """
    match event:
        case DwarfMoved(name=name, direction=direction):
            return MessageType.BOT_MOVE, f"{name} moves toward {int(direction)}"
        case BarrelMoved(team=team, direction=direction):
            return MessageType.BOT_MOVE, f"Barrel of team{team + 1} moves toward {int(direction)}"
        case DwarfHit(name=name):
            return MessageType.BARREL_HIT, f"{name} was hit!!"
        case PointScored(team=team):
            return MessageType.SCORE, f"Point for team{team + 1}"
        case BoardReset():
            return MessageType.SCORE, "Every piece is back on its start"


class TavernRules(Rules[State, tuple[Order, ...], tuple[Order, ...]]):
    """The rules for one tavern's settings, as the arena plays them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def initial_state(self, players: Sequence[Player]) -> State:
        return initial_state(self.settings, (players[0].names, players[1].names))

    def to_move(self, state: State) -> int:
        return state.to_move

    def check(self, state: State, seat: int, candidate: tuple[Order, ...]) -> tuple[Order, ...]:
        return check_orders(state, seat, candidate)

    def apply(
        self, state: State, seat: int, action: tuple[Order, ...], rng: RandomSource
    ) -> tuple[State, list[Event]]:
        return apply_turn(state, seat, action, rng)

    def outcome(self, state: State) -> Outcome | None:
        return state.outcome

    def timeout_action(self, state: State, seat: int) -> tuple[Order, ...]:
        return pass_orders()

    def scores(self, state: State) -> tuple[int, int]:
        return state.scores
