"""What a hosted bot's owner sees of its games (issue 33, item 7): for each of its last games,
how it ended (its exit: a crash, a limit, the end of the game), the end of what it wrote on
stderr, and each of its turns' stderr and CPU time. Built from the games' records; shown only
to whoever gives the bot's key (``/bots/NAME``, ``tavern bots logs``)."""

from __future__ import annotations

from server.debug import CPU_KEY, STDERR_KEY
from server.games.base import JsonObject
from server.records import Records
from server.replay import turns_before

LOGGED_GAMES = 10  # games a log lists, the newest first
MAX_LOGGED_GAMES = 50


def game_log(record: JsonObject, bot: str) -> JsonObject | None:
    """The bot's part of one game's record (None if it did not play in it)."""
    folded = bot.casefold()
    seats = [p for p in record["players"] if (p.get("bot") or "").casefold() == folded]
    if not seats:
        return None
    seat = seats[0]
    first = turns_before(record) + 1
    turns = []
    for index, turn in enumerate(record["turns"]):
        action = turn["action"]
        if turn["seat"] != seat["seat"] or not isinstance(action, dict):
            continue
        stderr, cpu_ms = action.get(STDERR_KEY), action.get(CPU_KEY)
        if stderr is not None or cpu_ms is not None:
            turns.append({"number": first + index, "stderr": stderr, "cpuMs": cpu_ms})
    return {
        "id": record["id"],
        "game": record["game"],
        "status": record["status"],
        "startedAt": record["startedAt"],
        "seat": seat["seat"],
        "result": record["result"],
        "exit": seat["exit"],
        "lastError": seat["lastError"],
        "stderr": seat["stderr"],
        "turns": turns,
    }


def bot_log(records: Records, bot: str, count: int) -> list[JsonObject]:
    """The bot's part of its last ``count`` games, newest first (read from the records)."""
    kept = [records.game(game_id) for game_id in records.games_of_bot(bot, count)]
    logged = [game_log(record, bot) for record in kept if record is not None]
    return [log for log in logged if log is not None]


def log_text(bot: str, games: list[JsonObject]) -> str:
    """A log as ``tavern bots logs`` prints it: each game, newest first, then its turns."""
    lines = []
    for game in games:
        result = game["result"] or {}
        outcome = f"{result.get('reason', game['status'])}, winner {result.get('winner')}"
        lines.append(f"{game['id']} ({game['game']}, {game['seat']}): {outcome}")
        lines.append(f"  exit: {game['exit']}")
        for turn in game["turns"]:
            cpu = "" if turn["cpuMs"] is None else f"{turn['cpuMs']} ms CPU"
            lines.append(f"  turn {turn['number']}: {cpu}")
            for text in (turn["stderr"] or "").splitlines():
                lines.append(f"    | {text}")
    return "\n".join(lines) if lines else f"{bot} has no game in the records"
