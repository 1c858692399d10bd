"""``tavern match``: an A/B test between two bot commands, as chess engine authors run them
with cutechess-cli and fishtest.

    tavern match GAME "A" "B" [--games N] [--concurrency K] [--sprt ELO0 ELO1]
                [--clock INITIAL_MS+INCREMENT_MS]

The match is a tournament of two bots (``paired_games``: pairs of games on one seed, the sides
swapped), played by the tournament runner on an arena of its own and recorded as a tournament
is, so that ``/league``, ``/matches`` and ``tavern replay`` find its games. A progress line
follows A's score, its Elo difference and, with ``--sprt``, the log-likelihood ratio; the test
stops the match as soon as it decides (``server.sprt``).
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

from server.config import ArenaConfig
from server.games import GAMES
from server.games.base import JsonObject, Outcome, TimeBank
from server.records import Records
from server.sprt import Sprt, Tally, Verdict
from server.tournament.runner import Progress, TournamentRunner
from server.tournament.schedule import Pairing, schedule
from server.tournament.spec import TournamentSpec, spec_from_mapping
from tavern_cli.play import command_entrant

NAMES = ("A", "B")


@dataclass(frozen=True, slots=True)
class MatchPlan:
    game: str
    commands: tuple[str, str]  # A's, B's
    games: int  # at most this many (an odd count rounded up: games come in pairs)
    concurrency: int  # games at once
    seed: int  # each pair's seed derives from it
    sprt: Sprt | None  # stop once the test decides (None: play every game)
    clock: TimeBank | None = None  # a time bank per bot instead of the flat time per move


@dataclass(frozen=True, slots=True)
class MatchReport:
    tally: Tally
    verdict: Verdict | None  # None without an SPRT
    decided_after: int  # games counted when the test decided (0: it did not)


def match_spec(plan: MatchPlan, started: datetime) -> TournamentSpec:
    """The match as a tournament, named (and identified) by when it started and its seed.

    Each command is checked as ``tavern play`` checks it (``PlayError``), so that a mistake is
    named after the bot, not after a key of a file the user never wrote."""
    seat_names = GAMES[plan.game].seat_names
    for name, command in zip(NAMES, plan.commands, strict=True):
        command_entrant(name, command, seat_names, plan.game)
    raw: JsonObject = {
        "name": f"match {started:%Y%m%d-%H%M%S} {plan.seed}",
        "game": plan.game,
        "seed": plan.seed,
        "parallel": plan.concurrency,
        "paired_games": plan.games,
        "bots": [
            {"name": name, "command": command}
            for name, command in zip(NAMES, plan.commands, strict=True)
        ],
    }
    if plan.clock is not None:
        raw["limits"] = {"clock": plan.clock.to_wire()}
    return spec_from_mapping(raw, Path.cwd())


def a_won(pairing: Pairing, outcome: Outcome) -> bool | None:
    """Whether A won the game (``None``: a draw)."""
    if outcome.winner is None:
        return None
    return pairing.bots[outcome.winner].name == NAMES[0]


def counted(tally: Tally, won: bool | None) -> Tally:
    if won is None:
        return Tally(tally.wins, tally.draws + 1, tally.losses)
    if won:
        return Tally(tally.wins + 1, tally.draws, tally.losses)
    return Tally(tally.wins, tally.draws, tally.losses + 1)


def elo_text(tally: Tally) -> str:
    elo, error = tally.elo()
    return f"Elo {elo:+.1f} ± {error:.1f}" if math.isfinite(error) else f"Elo {elo:+.1f} ± inf"


def llr_text(sprt: Sprt, tally: Tally) -> str:
    lower, upper = sprt.bounds()
    return f"LLR {sprt.llr(tally):+.2f} ({lower:+.2f}, {upper:+.2f})"


def status_line(tally: Tally, sprt: Sprt | None, total: int, running: int) -> str:
    """Games played, A's wins, draws and losses, its score, the Elo estimate and the LLR."""
    parts = [
        f"{tally.games}/{total} games ({running} playing)",
        f"A +{tally.wins} ={tally.draws} -{tally.losses}",
        f"score {tally.score():.3f}",
        elo_text(tally),
    ]
    if sprt is not None:
        parts.append(llr_text(sprt, tally))
    return ", ".join(parts)


class MatchProgress(Progress):
    """Counts each game from A's side and checks the test after it; on a terminal the line is
    redrawn in place, otherwise a line per game."""

    def __init__(self, total: int, out: IO[str], sprt: Sprt | None) -> None:
        super().__init__(total, 0, out)
        self.sprt = sprt
        self.tally = Tally()
        self.verdict: Verdict | None = None
        self.decided_after = 0  # games counted when the test decided
        self.decided = asyncio.Event()

    def game_over(self, pairing: Pairing, outcome: Outcome | None, note: str) -> None:
        self.running -= 1
        self.done += 1
        # A game that ends after the decision, before the match stops, is counted with the
        # others (it is in the records); the verdict stays the one the test reached.
        if outcome is not None:
            self.tally = counted(self.tally, a_won(pairing, outcome))
        if outcome is not None and self.sprt is not None and self.verdict is None:
            self.verdict = self.sprt.decision(self.tally)
            if self.verdict is not None:
                self.decided_after = self.tally.games
                self.decided.set()
        self._draw(ended=True)

    def update(self, note: str = "") -> None:
        self._draw(ended=False)

    def _draw(self, ended: bool) -> None:
        line = status_line(self.tally, self.sprt, self.total, self.running)
        if self.live:
            self.out.write(f"\r{line}\x1b[K")
        elif ended:
            self.out.write(f"{line}\n")
        self.out.flush()


async def run_match(
    spec: TournamentSpec,
    sprt: Sprt | None,
    config: ArenaConfig,
    records: Records,
    out: IO[str],
) -> MatchReport:
    """Play the match's games until the test decides (or every game is played).

    Once it decides, the games still being played are stopped as a stopped tournament's are:
    kept unfinished in the records, and not counted."""
    pairings = schedule(spec)
    runner = TournamentRunner(spec, config, records, out)
    records.tournament_started(spec.id, spec.name, spec.game, spec.raw)
    progress = MatchProgress(len(pairings), out, sprt)
    progress.update()
    games = asyncio.create_task(runner.play(pairings, progress))
    decided = asyncio.create_task(progress.decided.wait())
    try:
        await asyncio.wait({games, decided}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        decided.cancel()
        if not games.done():
            games.cancel()
            await asyncio.wait({games})
    if not games.cancelled():
        games.result()  # an error of the runner's
    if progress.live:
        out.write("\n")
    records.tournament_finished(spec.id)
    await records.flush()
    verdict = progress.verdict
    if sprt is not None and verdict is None:
        verdict = Verdict.INCONCLUSIVE
    # The summary counts what the records hold: a game that ended as the match stopped, after
    # the decision, is there even when the progress line never counted it.
    tally = Tally()
    for result in await asyncio.to_thread(records.results, spec.id):
        won = None if result.winner is None else result.bots[result.winner] == NAMES[0]
        tally = counted(tally, won)
    return MatchReport(tally, verdict, progress.decided_after)


def summary(spec: TournamentSpec, sprt: Sprt | None, report: MatchReport) -> str:
    """The match's result in a few lines: games, A's W/D/L and score, Elo, the test."""
    tally = report.tally
    lines = [
        f"match {spec.id}: {tally.games} games",
        f"A: won {tally.wins}, drew {tally.draws}, lost {tally.losses}; score {tally.score():.3f}",
        elo_text(tally),
    ]
    if sprt is not None and report.verdict is not None:
        lines.append(
            f"{llr_text(sprt, tally)}, for elo0 {sprt.elo0:g} against elo1 {sprt.elo1:g}, "
            f"alpha {sprt.alpha:g}, beta {sprt.beta:g}"
        )
        lines.append(f"verdict: {sprt.verdict_text(report.verdict)}")
        if report.decided_after and report.decided_after < tally.games:
            lines.append(
                f"(decided after {report.decided_after} games; "
                f"{tally.games - report.decided_after} more ended before the match stopped)"
            )
    return "\n".join(lines)
