"""``tavern match``: an A/B test of two bots, as cutechess-cli and fishtest run one.

    tavern match GAME "CMD_A" "CMD_B" [--games N] [--concurrency K] [--sprt ELO0 ELO1]

Games are played in pairs on one seed, the sides swapped, so that neither bot is favoured by a
seed or a seat; each pair's games are played at the same time as up to ``K`` others, in one arena
of this command's own (loopback, free ports, the records in a file). After each game a progress
line gives the running score, the Elo difference with its 95 % error bar and, with ``--sprt``,
the log-likelihood ratio against its bounds; the sequential test stops the match (no new game is
started) once it accepts H0 or H1. The last line is the verdict (docs/improving-a-bot.md).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from server.arena import Arena
from server.config import ArenaConfig
from server.games import GAMES
from server.match import MatchOptions
from server.records import Records, recording
from server.sandbox import Sandbox
from server.sprt import Results, Sprt, elo_estimate, log_likelihood_ratio
from server.tcp import TcpServer
from server.tournament.bots import BotProcess, finish_bot, seat_bot
from server.tournament.spec import DEFAULT_LIMITS, Entrant, Limits
from tavern_cli.play import PlayOptions, bot_entrant, config_for_play, records_file

NAMES = ("A", "B")


@dataclass(frozen=True, slots=True)
class AbOptions:
    game: str
    commands: tuple[str, str]  # A's, B's
    games: int = 100  # at most this many (pairs: rounded up to an even number)
    concurrency: int = 1
    sprt: Sprt | None = None
    seed: int | None = None  # the first pair's seed; pair i plays seed + i
    turns: int | None = None
    database: Path | None = None


@dataclass(frozen=True, slots=True)
class AbOutcome:
    results: Results  # A's
    verdict: str | None  # "H0", "H1", or None (no test, or not decided)
    unfinished: int  # games with no result (not counted)


def progress_line(results: Results, sprt: Sprt | None) -> str:
    """``games 12: A 7.5 - 4.5 B (+6 =3 -3), Elo +73 ± 120, LLR 0.52 (-2.94, 2.94)``."""
    line = (
        f"games {results.games}: A {results.points:g} - {results.games - results.points:g} B "
        f"(+{results.wins} ={results.draws} -{results.losses})"
    )
    estimate = elo_estimate(results)
    if estimate is not None:
        line += f", Elo {estimate.elo + 0.0:+.0f} ± {estimate.error:.0f}"
    if sprt is not None:
        ratio = log_likelihood_ratio(results, sprt.elo0, sprt.elo1)
        line += f", LLR {ratio:.2f} ({sprt.lower:.2f}, {sprt.upper:.2f})"
    return line


def verdict_line(outcome: AbOutcome, sprt: Sprt | None) -> str:
    if sprt is None:
        return "no test asked for (--sprt ELO0 ELO1): the figures above are the result"
    hypotheses = f"[{sprt.elo0:g}, {sprt.elo1:g}]"
    if outcome.verdict == "H1":
        return f"H1 accepted {hypotheses}: A is stronger than B by {sprt.elo1:g} Elo or more"
    if outcome.verdict == "H0":
        return f"H0 accepted {hypotheses}: A is not stronger than B by {sprt.elo1:g} Elo"
    return f"no decision {hypotheses} after {outcome.results.games} games: play more"


async def run_ab(
    options: AbOptions,
    config: ArenaConfig,
    say: Callable[[str], None],
    limits: Limits = DEFAULT_LIMITS,
) -> AbOutcome:
    """Play the match; ``say`` gets each progress line."""
    seat_names = GAMES[options.game].seat_names
    bots = [
        bot_entrant(name, command, tuple(seat_names), options.game)
        for name, command in zip(NAMES, options.commands, strict=True)
    ]
    play_options = PlayOptions(options.game, options.commands, turns=options.turns)
    config = config_for_play(config, play_options, limits)
    arena = Arena(config)
    first_seed = random.randrange(2**31) if options.seed is None else options.seed
    games = options.games + options.games % 2
    results = Results()
    unfinished = 0
    decided = asyncio.Event()
    async with (
        records_file(options.database) as database,
        recording(arena.listeners, database) as records,
        arena.running(),
        TcpServer(arena).serving() as tcp,
    ):
        assert tcp.port is not None
        port = tcp.port
        sandbox = Sandbox.create()
        slots = asyncio.Semaphore(options.concurrency)

        async def one_game(number: int) -> None:
            nonlocal results, unfinished
            async with slots:
                if decided.is_set():
                    return
                a_seat = number % 2  # A plays the first seat in a pair's first game
                seated = (bots[0], bots[1]) if a_seat == 0 else (bots[1], bots[0])
                seed = first_seed + number // 2
                points = await _play_game(
                    arena, options.game, port, sandbox, records, seated, seed, limits
                )
                if points is None:
                    unfinished += 1
                    return
                results = results.add(points if a_seat == 0 else 1 - points)
                say(progress_line(results, options.sprt))
                if options.sprt is not None and options.sprt.verdict(results) is not None:
                    decided.set()

        try:
            async with asyncio.TaskGroup() as games_group:
                for number in range(games):
                    games_group.create_task(one_game(number))
        finally:
            await sandbox.close()
            await records.flush()
    verdict = None if options.sprt is None else options.sprt.verdict(results)
    return AbOutcome(results, verdict, unfinished)


async def _play_game(
    arena: Arena,
    game: str,
    port: int,
    sandbox: Sandbox,
    records: Records,
    seated: tuple[Entrant, Entrant],
    seed: int,
    limits: Limits,
) -> float | None:
    """One game, ``seated[0]`` in the first seat; that seat's points (``None``: no result)."""
    match = arena.open(
        game,
        MatchOptions(seed=seed, hold_seats=True, seat_bots=tuple(bot.name for bot in seated)),
    )
    processes = [BotProcess(bot, match.id, seat, limits) for seat, bot in enumerate(seated)]
    try:
        for process in processes:
            await seat_bot(match, port, process, sandbox)
        await match.finished()  # the match's own timeouts bound the wait
    finally:
        if match.outcome is None:
            match.stop()  # stopped (Ctrl-C): no result, before its bots are killed
        for process in processes:
            process.outcome = match.outcome
            await finish_bot(process, records if match.started_at is not None else None)
    outcome = match.outcome
    if outcome is None:
        return None
    return 0.5 if outcome.winner is None else 1.0 if outcome.winner == 0 else 0.0
