"""Game files: one game as JSON lines, the one format ``tavern play --output`` writes and
``tavern replay``, the replay page and every other reader of a game take (docs/play.md).

A file is a ``game`` line (the game, its seed, settings, players and board), one ``turn`` line
per turn in order (what a spectator's page receives for it) and, once the game has one, a
``result`` line. Reading a file gives the same record the records give for a stored game
(docs/records.md), so a file replays exactly as a recorded game does; writing a recorded game
gives the lines ``tavern play`` would have written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from server.debug import CPU_KEY, DEBUG_KEY, STDERR_KEY, TIMING_KEY, without_debug
from server.games.base import AnyCodec, JsonObject
from server.match_views import MatchView
from server.replay import (
    CHARGE_KEY,
    CLOCK_KEY,
    ORIGIN_KEY,
    DamagedRecord,
    frames,
    game_of,
    turn_cpu_ms,
    turn_debug,
    turn_stderr,
    turn_timing,
    turns_before,
)


def recorded_settings(view: MatchView) -> JsonObject:
    """A game's settings as its record and its file keep them: the game's own, its limits
    (with its time bank as ``clock``, if it had one), and the game and turn it was played on
    from (``from``), if it was."""
    settings = {
        **view.codec.settings(),
        "turnTimeoutMs": round(view.limits.turn_timeout_s * 1000),
        "maxConsecutiveTimeouts": view.limits.max_consecutive_timeouts,
    }
    if view.limits.bank is not None:
        settings[CLOCK_KEY] = view.limits.bank.to_wire()
    if view.limits.charge_think:  # each reply charged its think time (docs/protocol.md)
        settings[CHARGE_KEY] = "think"
        settings["networkCreditMaxMs"] = round(view.limits.network_credit_max_s * 1000)
    if view.origin is not None:
        settings[ORIGIN_KEY] = view.origin
    return settings


def game_line(record: JsonObject, codec: AnyCodec, start: Any) -> JsonObject:
    """The first line: what replays the game (seed, settings, players), what draws it (the
    board) and its first position, so that a reader with no rules (the replay page) shows it."""
    return {
        "type": "game",
        "game": record["game"],
        "id": record["id"],
        "seed": record["seed"],
        "players": [
            {key: player[key] for key in ("seat", "nick", "names", "kind")}
            for player in record["players"]
        ],
        "settings": record["settings"],
        "board": codec.view.describe(),
        "startedAt": record["startedAt"],
        "state": codec.state_to_wire(start),
        "scores": codec.scores(start),
    }


def result_line(
    turns: int, result: JsonObject | None, text: str, finished_at: float | None
) -> JsonObject:
    """The last line: the result, also in words (a game cut short has none)."""
    return {
        "type": "result",
        "turns": turns,
        "result": result,
        "text": text,
        "finishedAt": finished_at,
    }


def record_lines(record: JsonObject, result_words: str) -> Iterator[bytes]:
    """A recorded game as the lines of its file, each ending in a newline; every turn's line
    carries its position and events, replayed from the record."""
    game = game_of(record)
    played = record["turns"]
    before = turns_before(record)
    for frame in frames(record):
        if frame.seat is None:
            yield orjson.dumps(game_line(record, game, frame.state)) + b"\n"
            continue
        turn = played[frame.turn - before - 1]
        line = {
            "type": "turn",
            "simulationId": record["id"],
            "turn": frame.turn,
            "seat": turn["seat"],
            "action": without_debug(turn["action"]),
            "timedOut": turn["timedOut"],
            "events": game.events_to_wire(frame.events),
            "state": game.state_to_wire(frame.state),
            "scores": game.scores(frame.state),
        }
        for key, kept in (
            (DEBUG_KEY, turn_debug(record, frame.turn)),
            (STDERR_KEY, turn_stderr(record, frame.turn)),
            (CPU_KEY, turn_cpu_ms(record, frame.turn)),
            (TIMING_KEY, turn_timing(record, frame.turn)),
        ):
            if kept is not None:
                line[key] = kept
        yield orjson.dumps(line) + b"\n"
    if record["result"] is not None:
        line = result_line(len(played), record["result"], result_words, record["finishedAt"])
        yield orjson.dumps(line) + b"\n"


def read_game_file(lines: Iterable[bytes], name: str) -> JsonObject:
    """The record of the game in a file's lines (``name`` says which file in errors); raises
    ``DamagedRecord`` naming the line that does not read."""
    record: JsonObject | None = None
    turns: list[JsonObject] = []
    number = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        where = f"{name}, line {number}"
        try:
            line = orjson.loads(text)
            kind = line["type"] if isinstance(line, dict) else None
        except (orjson.JSONDecodeError, KeyError) as error:
            raise DamagedRecord(f"{where} is not a line of a game file: {error}") from error
        if record is None:
            if kind != "game":
                raise DamagedRecord(f"{where}: a game file begins with its game line")
            record = _record_of(line, where)
        elif kind == "turn":
            turns.append(_turn_of(line, turns_before(record) + len(turns) + 1, where))
        elif kind == "result" and record["result"] is None:
            record["result"] = line.get("result")
            record["finishedAt"] = line.get("finishedAt")
            record["status"] = "finished"
        else:
            raise DamagedRecord(f"{where}: a {kind!r} line has no place there")
    if record is None:
        raise DamagedRecord(f"{name} holds no game: it is empty")
    record["turns"] = turns
    record["turnCount"] = len(turns)
    return record


def _record_of(line: JsonObject, where: str) -> JsonObject:
    """The record's summary from the game line, as the records give it."""
    try:
        players = [
            {
                "seat": str(player["seat"]),
                "nick": str(player["nick"]),
                "names": list(player["names"]),
                "kind": str(player.get("kind", "bot")),
                "bot": None,
                "replies": None,
                "replyMeanMs": None,
                "replyWorstMs": None,
                "errors": None,
                "lastError": None,
                "stderr": None,
                "exit": None,
            }
            for player in line["players"]
        ]
        record: JsonObject = {
            "id": str(line["id"]),
            "game": str(line["game"]),
            "seed": int(line["seed"]),
            "settings": dict(line["settings"]),
            "status": "unfinished",
            "startedAt": line.get("startedAt"),
            "finishedAt": None,
            "players": players,
            "result": None,
            "tournament": None,
            "pairing": None,
        }
    except (KeyError, TypeError, ValueError) as error:
        raise DamagedRecord(f"{where}: the game line lacks {error}") from error
    return record


def _turn_of(line: JsonObject, expected: int, where: str) -> JsonObject:
    """A turn line as the records keep the turn."""
    try:
        number, seat, action, timed_out = (
            line["turn"],
            line["seat"],
            line["action"],
            line["timedOut"],
        )
    except KeyError as error:
        raise DamagedRecord(f"{where}: the turn line lacks {error}") from error
    if number != expected:
        raise DamagedRecord(f"{where}: turn {number} where turn {expected} should be")
    for key in (DEBUG_KEY, STDERR_KEY):
        text = line.get(key)
        if isinstance(text, str) and isinstance(action, dict):  # with the action, as recorded
            action = {**action, key: text}
    used, timing = line.get(CPU_KEY), line.get(TIMING_KEY)
    if isinstance(used, int) and not isinstance(used, bool) and isinstance(action, dict):
        action = {**action, CPU_KEY: used}
    if isinstance(timing, list) and isinstance(action, dict):
        action = {**action, TIMING_KEY: timing}
    return {"number": number, "seat": seat, "action": action, "timedOut": bool(timed_out)}
