"""A game in words, for a terminal: the board, each turn, and how the game ended.

``tavern play`` says a game as it goes, ``tavern replay`` a recorded one, and ``tavern validate``
and tournaments say how each of their games ended: all in the same words, from here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from server.games.base import AnyCodec, JsonObject
from server.match import MatchEnd
from server.replay import (
    CLOCK_KEY,
    ORIGIN_KEY,
    TurnRange,
    frames,
    game_of,
    turn_debug,
    turn_stderr,
    turns_before,
)

FORFEITS = {
    MatchEnd.PLAYER_DISCONNECTED: "disconnected",
    MatchEnd.TURN_TIMEOUT: "did not answer in time",
    MatchEnd.TOO_MANY_TIMEOUTS: "timed out too many turns in a row",
    MatchEnd.OUT_OF_TIME: "ran out of time on its clock",
}
"""What the seat that lost by the arena's rules did, rather than by the game's own."""


def board_text(game: AnyCodec, state: Any) -> str:
    """The board with its column numbers above and its row numbers on the left."""
    width, height = game.view.board_size()
    margin = " " * (len(str(height - 1)) + 1)
    lines = []
    if width > 10:
        lines.append(margin + "".join(str(x // 10) if x >= 10 else " " for x in range(width)))
    lines.append(margin + "".join(str(x % 10) for x in range(width)))
    for y, row in enumerate(game.text.render_text(state).split("\n")):
        lines.append(f"{y:>{len(margin) - 1}} {row}")
    return "\n".join(line.rstrip() for line in lines)


def clock_text(initial_ms: int, increment_ms: int) -> str:
    """A game's time bank: ``clock: 60 s each, +0.5 s a move``."""
    return f"clock: {initial_ms / 1000:g} s each, +{increment_ms / 1000:g} s a move"


def turn_text(
    game: AnyCodec,
    number: int,
    seat: int,
    nick: str,
    timed_out: bool,
    events: Sequence[Any],
    state: Any,
    debug: str | None = None,
    stderr: str | None = None,
    time_left_s: Sequence[float] | None = None,
) -> str:
    """One turn: who played it, the score after it, each seat's time left on its clock (in a
    game with a time bank), what happened, what the bot said of it (its debug text and what it
    wrote on stderr during the turn, if any), and the board."""
    scores = ", ".join(f"{name} {value}" for name, value in game.scores(state).items())
    heading = f"turn {number}: {game.seat_names[seat]} ({nick})"
    if timed_out:
        heading += ", timed out"
    lines = [f"{heading}   [{scores}]"]
    if time_left_s is not None:
        left = zip(game.seat_names, time_left_s, strict=True)
        lines.append("  time left: " + ", ".join(f"{name} {s:.1f} s" for name, s in left))
    said = game.text.events_text(events)
    lines += [f"  {line}" for line in said] if said else ["  passes"]
    if debug is not None:
        lines += [f"  debug| {line}" for line in debug.splitlines() or [""]]
    if stderr is not None:
        lines += [f"  stderr| {line}" for line in stderr.splitlines() or [""]]
    lines.append(board_text(game, state))
    return "\n".join(lines)


def result_text(
    game: AnyCodec, nicks: Sequence[str], result: JsonObject | None, last_seat: int | None
) -> str:
    """How the game ended, in words; ``last_seat`` played its last turn (``None``: none was
    played).

    By the game's rules: ``team1 (Dummy) wins 3 to 1: Points to win reached``, ``a draw at 20
    to 20: Players agreed to finish``. Forfeited: ``troll (b) wins: dwarf (a) disconnected (the
    score was 32 to 32)``. Each score is the winner's first.
    """
    if result is None:
        return "unfinished: no result"
    seat_names = list(game.seat_names)
    score = result.get("score")
    values = list(score.values()) if isinstance(score, dict) else None  # by seat
    winner = None if result.get("winner") is None else seat_names.index(result["winner"])
    reason = result["reason"]

    def who(seat: int) -> str:
        return f"{seat_names[seat]} ({nicks[seat]})"

    def points(first: int) -> str:
        """The score, ``first``'s points first: `` 3 to 1`` (nothing before the start)."""
        return "" if values is None else f" {values[first]} to {values[1 - first]}"

    if reason in FORFEITS or reason == MatchEnd.SERVER_ERROR:
        was = f" (the score was{points(0 if winner is None else winner)})" if values else ""
        if reason == MatchEnd.SERVER_ERROR:
            return f"no winner: the arena failed during the game{was}"
        if winner is None:
            return f"a draw: both players {FORFEITS[reason]}{was}"
        return f"{who(winner)} wins: {who(1 - winner)} {FORFEITS[reason]}{was}"
    if winner is None:
        scored = f"a draw at{points(0)}" if values else "a draw"
    else:
        scored = f"{who(winner)} wins{points(winner)}"
    explained = None if last_seat is None else game.text.end_text(reason, who(last_seat))
    return f"{scored}: {explained or reason}"


def replay_text(record: JsonObject, turns: TurnRange | None = None) -> Iterator[str]:
    """The game turn by turn as text: a header and the legend, then each turn (of ``turns``,
    all by default) with its board, then the result in words."""
    game = game_of(record)
    turns = TurnRange() if turns is None else turns
    nicks = [p["nick"] for p in record["players"]]
    players = " against ".join(f"{p['seat']} ({p['nick']})" for p in record["players"])
    header = f"{record['game']} {record['id']}, seed {record['seed']}: {players}"
    origin = record["settings"].get(ORIGIN_KEY)
    if origin is not None and "position" in origin:
        taken = f" of game {origin['game']}" if "game" in origin else ""
        header += f"\nbegun at a given position{taken}, after turn {origin['turn']}"
    elif origin is not None:
        turn = origin["turn"]
        header += (
            f"\nplayed on from game {origin['game']} after its turn {turn}"
            f" (turns 1 to {turn} are that game's)"
        )
    clock = record["settings"].get(CLOCK_KEY)
    if clock is not None:
        header += "\n" + clock_text(clock["initialMs"], clock["incrementMs"])
    yield header
    before = turns_before(record)
    for frame in frames(record):
        if frame.seat is None:
            yield "\n".join(game.text.legend_text(frame.state))
            if 0 in turns:
                yield f"\nstart\n{board_text(game, frame.state)}"
        elif frame.turn in turns:
            timed_out = record["turns"][frame.turn - before - 1]["timedOut"]
            text = turn_text(
                game,
                frame.turn,
                frame.seat,
                nicks[frame.seat],
                timed_out,
                frame.events,
                frame.state,
                turn_debug(record, frame.turn),
                turn_stderr(record, frame.turn),
            )
            yield f"\n{text}"
        elif turns.last is not None and frame.turn > turns.last:
            break
    yield f"\n{replay_result_text(record)}"


def replay_result_text(record: JsonObject) -> str:
    """A recorded game's result in words."""
    nicks = [p["nick"] for p in record["players"]]
    game = game_of(record)
    return result_text(game, nicks, record["result"], last_seat(game, record))


def last_seat(game: AnyCodec, record: JsonObject) -> int | None:
    """The seat that played a recorded game's last turn (``None``: no turn was played)."""
    played = record["turns"]
    return list(game.seat_names).index(played[-1]["seat"]) if played else None
