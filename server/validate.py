"""``tavern validate``: play a bot against the house players and check that it plays legally.

Like the challenge's validator, it answers one question: does the bot finish every game with
only legal moves, within time? Each game runs exactly as in a tournament (a real process under
the same limits); the bot fails a game if it sent anything the arena rejected, let a turn time
out, lost by leaving or by timeouts, or its process ended before the game did (a crash, a
limit: the verdict says which).
"""

from __future__ import annotations

import asyncio
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

from server.commentary import last_seat, result_text
from server.config import ArenaConfig
from server.games import GAMES
from server.games.base import JsonObject
from server.league import crashed
from server.match import MatchEnd
from server.records import GameFilter, opened
from server.replay import game_of
from server.tournament.bots import quoted_stderr
from server.tournament.runner import TournamentRunner
from server.tournament.spec import DEFAULT_LIMITS, Entrant, Limits, TournamentSpec

CANDIDATE = "candidate"
FORFEITS = (MatchEnd.PLAYER_DISCONNECTED, MatchEnd.TOO_MANY_TIMEOUTS, MatchEnd.TURN_TIMEOUT)


@dataclass(frozen=True, slots=True)
class Verdict:
    opponent: str
    game_id: str
    ok: bool
    summary: str
    said: str  # what a failing candidate wrote on stderr, quoted (quoted_stderr)


def house_entrants(game: str, seat_name: str) -> list[Entrant]:
    """Every house player that can take ``seat_name``, as a bot process."""
    entrants = []
    for name, player in GAMES[game].house_players.items():
        if seat_name in player.sides:
            command = (
                "{python}",
                "-m",
                "bots.house_bot",
                game,
                name,
                "--simulation",
                "{simulation}",
                "--side",
                "{side}",
                "--port",
                "{port}",
                "--seed",
                "{seed}",
            )
            entrants.append(Entrant(f"house {name}", command, (seat_name,), Path.cwd()))
    return entrants


async def validate(
    game: str,
    side: str,
    command: list[str],
    games: int,
    turn_timeout_ms: int,
    startup_ms: int = DEFAULT_LIMITS.startup_ms,
) -> list[Verdict]:
    """Play ``games`` games against each house player of the other side; judge each one."""
    seat_names = GAMES[game].seat_names
    if side not in seat_names:
        raise ValueError(f"--side must be one of {', '.join(seat_names)}")
    if not command:
        raise ValueError("give the bot's command after --")
    other = next(name for name in seat_names if name != side)
    candidate = Entrant(CANDIDATE, tuple(command), (side,), Path.cwd())
    limits = Limits(
        DEFAULT_LIMITS.cpu_seconds, DEFAULT_LIMITS.memory_mb, startup_ms, turn_timeout_ms
    )
    verdicts: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="tavern-validate-") as scratch:
        async with opened(Path(scratch) / "validate.db") as records:
            for round_number in range(games):
                spec = TournamentSpec(
                    id=f"validate-{round_number}",
                    name=f"validate {round_number}",
                    game=game,
                    seed=round_number + 1,
                    parallel=2,
                    swap_sides=False,
                    entrants=(candidate, *house_entrants(game, other)),
                    limits=limits,
                    raw={},
                )
                await TournamentRunner(spec, ArenaConfig(), records, io.StringIO()).run()
            page = await asyncio.to_thread(records.games, GameFilter(per_page=1000))
            for summary in page["games"]:
                record = await asyncio.to_thread(records.game, summary["id"])
                assert record is not None
                verdicts.append(judge(record))
    return sorted(verdicts, key=lambda verdict: (verdict.opponent, verdict.game_id))


def judge(record: JsonObject) -> Verdict:
    """Did the candidate play this game to its end, legally and in time?"""
    seat = next(i for i, player in enumerate(record["players"]) if player["bot"] == CANDIDATE)
    player = record["players"][seat]
    opponent = record["players"][1 - seat]["bot"] or "?"
    result = record["result"] or {"reason": "unfinished", "winner": None}
    timeouts = sum(
        1 for turn in record["turns"] if turn["timedOut"] and turn["seat"] == player["seat"]
    )
    problems = []
    if player["errors"]:
        problems.append(f"{player['errors']} rejected messages (last: {player['lastError']})")
    if timeouts:
        problems.append(f"{timeouts} turns timed out")
    if result["reason"] in FORFEITS and result["winner"] != player["seat"]:
        problems.append("lost by forfeit")
    if result["reason"] == "unfinished":
        problems.append("the game did not finish")
    if crashed(player["exit"]):
        problems.append(f"its process: {player['exit']}")
    game = game_of(record)
    nicks = [p["nick"] for p in record["players"]]
    summary = "; ".join(
        [result_text(game, nicks, record["result"], last_seat(game, record)), *problems]
    )
    said = quoted_stderr(player["stderr"] or "") if problems else ""
    return Verdict(opponent, record["id"], not problems, summary, said)
