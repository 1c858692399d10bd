"""Dwarven Tavern on the wire: the original server's messages, byte-compatible field by field.

Wire shapes live here and nowhere else; ``rules`` never sees JSON. Field names and their order
follow the original (``type`` first, then its fields), and the arena's additions (``game``,
``seed``, ``result``, ``reason``) come after them so that old bots never notice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.errors import BotError
from server.games.base import (
    ActionRejected,
    Codec,
    JoinRejected,
    JsonObject,
    Player,
)
from server.games.tavern import position, rules
from server.games.tavern.pieces import (
    TEAM_NAMES,
    BarrelMoved,
    BoardReset,
    Coords,
    Direction,
    Dwarf,
    DwarfHit,
    DwarfMoved,
    Event,
    Order,
    PointScored,
    Settings,
    State,
)
from server.games.tavern.rules import TavernRules
from server.games.tavern.text import TavernText
from server.games.tavern.view import TavernBoard

MAX_NAME_LENGTH = 64


class TavernCodec(Codec[State, tuple[Order, ...], tuple[Order, ...]]):
    """Two clans push each other's barrel home; see ``rules`` for the mechanics."""

    name = "tavern"
    seat_names = TEAM_NAMES
    seat_field = "team"
    score_names = TEAM_NAMES
    tags_messages = False
    passes_on_timeout = True
    rules: rules.TavernRules

    def __init__(self, game_rules: TavernRules) -> None:
        super().__init__(
            game_rules,
            TavernText(game_rules.settings),
            TavernBoard(game_rules.settings, self.settings),
        )

    @classmethod
    def from_settings(cls, settings: JsonObject) -> TavernCodec:

        def coords(point: JsonObject) -> Coords:
            return Coords(point["x"], point["y"])

        positions = settings["positions"]
        return cls(
            rules.TavernRules(
                Settings(
                    width=settings["width"],
                    height=settings["height"],
                    points_to_win=settings["pointsToWin"],
                    turn_limit=settings["turnLimit"],
                    barrel_starts=(
                        coords(positions["team1"]["barrel"]),
                        coords(positions["team2"]["barrel"]),
                    ),
                    dwarf_starts=(
                        tuple(coords(p) for p in positions["team1"]["bots"]),
                        tuple(coords(p) for p in positions["team2"]["bots"]),
                    ),
                )
            )
        )

    # --- seats -------------------------------------------------------------------------------
    def choose_seat(self, free_seats: Sequence[int], request: JsonObject) -> int:
        # As in the original, the first to join is team1 and the second team2.
        return free_seats[0]

    def player_from_join(self, request: JsonObject) -> Player:
        nick = request.get("nick", "anonymous")
        if not isinstance(nick, str) or not 0 < len(nick) <= MAX_NAME_LENGTH:
            raise JoinRejected(
                BotError.INVALID_JOIN, f"nick must be a string of 1 to {MAX_NAME_LENGTH} characters"
            )
        names = request.get("names", [])
        if not isinstance(names, list) or not all(
            isinstance(name, str) and 0 < len(name) <= MAX_NAME_LENGTH for name in names
        ):
            raise JoinRejected(
                BotError.INVALID_JOIN,
                f"names must be a list of strings of 1 to {MAX_NAME_LENGTH} characters",
            )
        return Player(nick, tuple(names))

    # --- messages ----------------------------------------------------------------------------
    def candidate(self, message: JsonObject) -> tuple[Order, ...]:
        return orders_from_wire(message.get("actions"))

    def action_to_wire(self, action: tuple[Order, ...]) -> JsonObject:
        return {"actions": orders_to_wire(action)}

    def after_turn_messages(
        self, before: State, after: State, events: Sequence[Any]
    ) -> list[tuple[int, JsonObject]]:
        # Every point is announced to both players, team1's first (the original only ever
        # announced one when both scored in the same turn). Most turns score none: the scores
        # tell, without looking at each event.
        messages: list[tuple[int, JsonObject]] = []
        if after.scores == before.scores:
            return messages
        for event in events:
            if isinstance(event, PointScored):
                score = {"type": "score", "team": TEAM_NAMES[event.team]}
                messages += [(0, score), (1, score)]
        return messages

    def scores(self, state: State) -> JsonObject:
        # Every turn message carries the scores: built directly, without the generic zip.
        team1, team2 = state.scores
        return {"team1": team1, "team2": team2}

    def bot_state(self, state: State) -> JsonObject:
        return state_to_wire(state.dwarves, state.barrels)  # every turn: a call less

    def state_to_wire(self, state: State) -> JsonObject:
        return state_to_wire(state.dwarves, state.barrels)

    def position_to_wire(self, state: State) -> JsonObject:
        # The turn message's fields, and the team on move (after a point, the one that conceded).
        return {
            "state": self.state_to_wire(state),
            "turn": state.current_turn + 1,
            "score": self.scores(state),
            "team": TEAM_NAMES[state.to_move],
        }

    def position_from_wire(self, wire: object) -> tuple[State, int]:
        state = position.state_from_wire(self.rules.settings, wire)
        return state, state.current_turn

    def events_to_wire(self, events: Sequence[Any]) -> list[JsonObject]:
        """The original's ``{type, message}``, then what pages draw: ``kind`` (move, barrel,
        thrown, point, reset), the piece, and the squares it went ``from`` and ``to``."""
        return [event_to_wire(event) for event in events]

    def counting_rules(self) -> JsonObject:
        settings = self.rules.settings
        return {"pointsToWin": settings.points_to_win, "turnLimit": settings.turn_limit}

    def settings(self) -> JsonObject:
        settings = self.rules.settings

        def point(coords: Coords) -> JsonObject:
            return {"x": coords.x, "y": coords.y}

        return {
            "width": settings.width,
            "height": settings.height,
            "pointsToWin": settings.points_to_win,
            "turnLimit": settings.turn_limit,
            "positions": {
                team: {
                    "barrel": point(settings.barrel_starts[index]),
                    "bots": [point(c) for c in settings.dwarf_starts[index]],
                }
                for index, team in enumerate(TEAM_NAMES)
            },
        }


def state_to_wire(dwarves: Sequence[Dwarf], barrels: Sequence[Coords]) -> JsonObject:
    """The original's ``state``: barrels keyed by team (with ``team``), then one list per team.

    Built in one pass over the dwarves, each appended to its team's list (every turn message
    holds one: two filtered comprehensions and a zip took half as long again)."""
    team1_barrel, team2_barrel = barrels
    team1: list[JsonObject] = []
    team2: list[JsonObject] = []
    append_to = (team1.append, team2.append)
    for dwarf in dwarves:
        coords = dwarf.coords
        append_to[dwarf.team](
            {"id": dwarf.id, "name": dwarf.name, "coords": {"x": coords.x, "y": coords.y}}
        )
    return {
        "barrels": {
            "team1": {"team": "team1", "coords": {"x": team1_barrel.x, "y": team1_barrel.y}},
            "team2": {"team": "team2", "coords": {"x": team2_barrel.x, "y": team2_barrel.y}},
        },
        "team1": team1,
        "team2": team2,
    }


def event_to_wire(event: Event) -> JsonObject:
    kind, text = rules.event_text(event)
    wire: JsonObject = {"type": kind, "message": text}
    match event:
        case DwarfMoved(dwarf_id=dwarf_id, start=start, end=end):
            wire.update(kind="move", dwarf=dwarf_id, **{"from": _point(start), "to": _point(end)})
        case DwarfHit(dwarf_id=dwarf_id, start=start, end=end):
            wire.update(kind="thrown", dwarf=dwarf_id, **{"from": _point(start), "to": _point(end)})
        case BarrelMoved(team=team, start=start, end=end):
            wire.update(
                kind="barrel", team=TEAM_NAMES[team], **{"from": _point(start), "to": _point(end)}
            )
        case PointScored(team=team):
            wire.update(kind="point", team=TEAM_NAMES[team])
        case BoardReset():
            wire.update(kind="reset")
    return wire


def _point(coords: Coords) -> JsonObject:
    return {"x": coords.x, "y": coords.y}


_DIRECTIONS = {direction.name: direction for direction in Direction}
"""Each direction by its name on the wire (a dict: ``Direction[name]`` costs several calls)."""
_KEPT_IDS = 201  # dwarf ids run from 1 to twice botsPerPlayer, which is at most 100
_ORDERS: dict[Direction | None, tuple[Order, ...]] = {
    direction: tuple(Order(bot_id, direction) for bot_id in range(_KEPT_IDS))
    for direction in (None, *Direction)
}
"""The orders of the dwarves' ids, made once: a turn reads five of them (orders are immutable)."""


def _order(bot_id: int, direction: Direction | None) -> Order:
    return _ORDERS[direction][bot_id] if bot_id < _KEPT_IDS else Order(bot_id, direction)


_MOVE_ORDERS = {direction.name: _ORDERS[direction] for direction in Direction}
"""The orders of the dwarves' ids by direction name: the common action read in two lookups."""


def orders_from_wire(actions: object) -> tuple[Order, ...]:
    """Parse ``actions`` as the original validated them, plus types it left unchecked.

    The common action (an object, a plain positive ``botId`` as orjson reads it, ``MOVE`` with
    a direction or ``PASS``) is read inline; any other goes through ``_order_from_wire``'s
    checks, which accept or refuse it as they always did."""
    if not isinstance(actions, list) or not actions:
        raise ActionRejected(BotError.INVALID_TURN, '"actions" must be a non-empty list')
    orders: list[Order] = []
    append = orders.append
    for index, action in enumerate(actions):
        if type(action) is dict:
            bot_id = action.get("botId")
            if type(bot_id) is int and 0 < bot_id < _KEPT_IDS:
                kind = action.get("type")
                if kind == "MOVE":
                    direction = action.get("direction")
                    if type(direction) is str and direction in _MOVE_ORDERS:
                        append(_MOVE_ORDERS[direction][bot_id])
                        continue
                elif kind == "PASS":
                    append(_ORDERS[None][bot_id])
                    continue
        append(_order_from_wire(index, action))
    return tuple(orders)


def _order_from_wire(index: int, action: object) -> Order:
    """The order of the action at ``index``, with every check; raises ``ActionRejected``."""
    if not isinstance(action, dict):
        raise ActionRejected(BotError.INVALID_TURN, f"action {index} is not an object")
    bot_id = _bot_id(action.get("botId"))
    if bot_id is None:
        raise ActionRejected(BotError.INVALID_TURN, f"action {index} has no valid botId")
    kind = action.get("type")
    if kind == "PASS":
        return _order(bot_id, None)
    if kind == "MOVE":
        direction = action.get("direction")
        if not isinstance(direction, str) or direction not in _DIRECTIONS:
            raise ActionRejected(
                BotError.INVALID_TURN,
                f"action {index}: direction must be NORTH, EAST, SOUTH or WEST",
            )
        return _order(bot_id, _DIRECTIONS[direction])
    raise ActionRejected(BotError.INVALID_TURN, f"action {index}: type must be MOVE or PASS")


_DIRECTION_NAMES = tuple(direction.name for direction in Direction)  # by value

MAX_BOT_ID_DIGITS = 18  # far beyond any dwarf's id, and far below Python's int-parsing limit


def _bot_id(value: object) -> int | None:
    # The original accepted "3" for 3 (JavaScript's loose equality); keep that.
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value > 0:
        return value
    if (
        isinstance(value, str)
        and 0 < len(value) <= MAX_BOT_ID_DIGITS
        and value.isascii()
        and value.isdigit()
        and int(value) > 0
    ):
        return int(value)
    return None


def order_to_wire(order: Order) -> JsonObject:
    if order.direction is None:
        return {"botId": order.bot_id, "type": "PASS"}
    return {"botId": order.bot_id, "type": "MOVE", "direction": _DIRECTION_NAMES[order.direction]}


_WIRE_BY_DIRECTION = {
    direction: tuple(order_to_wire(order) for order in orders)
    for direction, orders in _ORDERS.items()
}
"""``order_to_wire`` of each order of ``_ORDERS``, made once: a turn's action is five of them
(the records and pages only encode them; nothing changes them)."""


def orders_to_wire(orders: tuple[Order, ...]) -> list[JsonObject]:
    wire = []
    for order in orders:
        bot_id = order.bot_id
        if bot_id < _KEPT_IDS:
            wire.append(_WIRE_BY_DIRECTION[order.direction][bot_id])
        else:
            wire.append(order_to_wire(order))
    return wire
