"""``tavern match``: an A/B test between two bot commands, as chess engine authors run them
with cutechess-cli and fishtest.

    tavern match GAME "A" "B" [--games N] [--concurrency K] [--sprt ELO0 ELO1]
                [--clock INITIAL_MS+INCREMENT_MS] [--workers]

The match is a tournament of two bots (``paired_games``: pairs of games on one seed, the sides
swapped), played by the tournament runner on an arena of its own and recorded as a tournament
is, so that ``/league``, ``/matches`` and ``tavern replay`` find its games. A progress line
follows A's score, its Elo difference and, with ``--sprt``, the log-likelihood ratio; the test
stops the match as soon as it decides (``server.sprt``).

With ``--workers`` the games go to ``tavern worker``s instead, on the tournaments' Redis queue
(``server.tournament_queue``): ``--concurrency`` of them at a time are in the queue or being
played, the next queued as one finishes; the results are read from the records as they come,
in the order the games ended, and counted as a local match counts them. Once the test decides,
no game is queued any more, the match's games no worker has taken are taken off the queue, and
those being played are awaited (a worker cannot be told to stop one) and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from server.cancelling import stop_if_cancelled
from server.config import ArenaConfig
from server.games import GAMES
from server.games.base import JsonObject, Outcome, TimeBank
from server.league import GameResult
from server.records import Records
from server.sprt import Sprt, Tally, Verdict
from server.tournament.runner import Progress, TournamentRunner
from server.tournament.schedule import Pairing, schedule
from server.tournament.spec import TournamentSpec, spec_from_mapping
from server.tournament_queue import (
    CHECK_REDIS_S,
    GROUP,
    PROGRESS_S,
    STREAM,
    LostGames,
    QueueLink,
    queue_games,
    run_id,
    spec_key,
)
from tavern_cli.play import command_entrant

if TYPE_CHECKING:
    from server.redis_client import Client

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


def a_won_result(result: GameResult) -> bool | None:
    """Whether A won a recorded game (``None``: a draw)."""
    return None if result.winner is None else result.bots[result.winner] == NAMES[0]


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
        if outcome is not None:
            self.count(a_won(pairing, outcome))
        self._draw(ended=True)

    def recorded(self, won: bool | None) -> None:
        """A game a worker played is in the records with a result (``won`` as ``count``'s)."""
        self.done += 1
        self.count(won)
        self._draw(ended=True)

    def count(self, won: bool | None) -> None:
        """One more game with a result (``won``: A's win; ``None``: a draw), and the test.

        A game that ends after the decision, before the match stops, is counted with the
        others (it is in the records); the verdict stays the one the test reached."""
        self.tally = counted(self.tally, won)
        if self.sprt is not None and self.verdict is None:
            self.verdict = self.sprt.decision(self.tally)
            if self.verdict is not None:
                self.decided_after = self.tally.games
                self.decided.set()

    def update(self, note: str = "") -> None:
        self._draw(ended=False)

    def say(self, line: str) -> None:
        """A line of its own, above the progress line on a terminal."""
        self.out.write(f"\r{line}\x1b[K\n" if self.live else f"{line}\n")
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
    return await _report(spec, sprt, records, out, progress)


async def _report(
    spec: TournamentSpec,
    sprt: Sprt | None,
    records: Records,
    out: IO[str],
    progress: MatchProgress,
) -> MatchReport:
    """The match is over: recorded as finished, and its report from the records."""
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
        tally = counted(tally, a_won_result(result))
    return MatchReport(tally, verdict, progress.decided_after)


DROP_WAIT_S = 5.0  # how long a stopped match waits for Redis to drop its untaken games

# Takes a match's games off the queue unless a worker has taken them (they are pending), in one
# step: a worker cannot read one between the look at what is pending and the deletion.
DROP_UNTAKEN = """
local taken = {}
local pending = redis.pcall('XPENDING', KEYS[1], ARGV[1], '-', '+', 1000000)
if pending.err then pending = {} end  -- no group: Redis restarted without the queue
for _, entry in ipairs(pending) do
  taken[entry[1]] = true
end
local dropped = 0
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'tournament' and fields[i + 1] == ARGV[2] and not taken[entry[1]] then
      redis.call('XDEL', KEYS[1], entry[1])
      dropped = dropped + 1
    end
  end
end
return dropped
"""


async def run_queued_match(
    spec: TournamentSpec,
    sprt: Sprt | None,
    records: Records,
    redis_url: str,
    out: IO[str],
) -> MatchReport:
    """Play the match's games on ``tavern worker``s until the test decides (or every game is
    played): ``spec.parallel`` games in the queue or being played at a time.

    Stopped (SIGINT, SIGTERM), it takes its games no worker has taken off the queue; those
    being played are the workers' to finish."""
    records.tournament_started(spec.id, spec.name, spec.game, spec.raw)
    await records.flush()
    link = QueueLink(redis_url, say=lambda line: out.write(f"tavern: {line}\n"))
    progress = MatchProgress(len(schedule(spec)), out, sprt)
    progress.update()
    try:
        await QueuedMatch(spec, records, link, progress).follow()
        # Decided: a game still played has its spec already, and no other is handed out.
        await link.attempt(lambda client: client.delete(spec_key(spec.id)))
    except asyncio.CancelledError:
        with contextlib.suppress(TimeoutError):  # Redis away: its games stay queued
            await asyncio.wait_for(
                link.attempt(lambda client: _drop_untaken(client, spec)), DROP_WAIT_S
            )
        raise
    finally:
        await link.close()
    return await _report(spec, sprt, records, out, progress)


class QueuedMatch:
    """A match's games on the queue, as the command that queued them follows them.

    Should Redis restart without them (another run id), the games it queued that are neither
    finished nor in the queue are queued again unless a worker plays them before long, as a
    queued tournament's are (``server.tournament_queue``); not once the test has decided."""

    def __init__(
        self, spec: TournamentSpec, records: Records, link: QueueLink, progress: MatchProgress
    ) -> None:
        self.spec = spec
        self.records = records
        self.link = link
        self.progress = progress
        self.waiting = schedule(spec)  # not queued yet
        self.sent: dict[str, Pairing] = {}  # queued, by key
        self.counted: set[str] = set()  # the games counted, by id
        self.decided = False  # the test decided, and the untaken games were dropped
        self.redis_run = ""  # the run id of the Redis server the games are queued on
        self.suspects = LostGames(spec)

    async def follow(self) -> None:
        """Queue the games as room is made, count each result as it is recorded, and return
        once the test has decided and the games taken by workers are over (or every game is).
        """
        self.redis_run = await self.link.call(run_id)
        checked = time.monotonic()
        while True:
            stop_if_cancelled()
            queued = await self.link.call(self._queued)
            await self._count()
            if self.progress.verdict is not None and not self.decided:
                self.decided, self.waiting = True, []
                self.suspects.clear()
                dropped = await self.link.call(lambda client: _drop_untaken(client, self.spec))
                self.progress.say(
                    f"tavern: decided: {dropped} queued games no worker had taken are dropped"
                )
                continue
            room = self.spec.parallel - len(queued)
            if self.waiting and room > 0:
                batch, self.waiting[:room] = self.waiting[:room], []
                await self.link.call(functools.partial(self._add, games=batch))
                continue
            if not self.waiting and not queued and not self.suspects:
                return
            playing = await asyncio.to_thread(self.records.playing_pairings, self.spec.id)
            if len(playing) != self.progress.running:
                self.progress.running = len(playing)
                self.progress.update()
            now = time.monotonic()
            if now - checked >= CHECK_REDIS_S and not self.decided:
                checked = now
                await self._check_redis(queued, now)
            await self._requeue(playing, now)
            await asyncio.sleep(PROGRESS_S)

    async def _count(self) -> None:
        """Count the results not counted yet, in the order the games ended (one a worker
        committed late may come before others already counted)."""
        for result in await asyncio.to_thread(self.records.results, self.spec.id):
            if result.game_id not in self.counted:
                self.counted.add(result.game_id)
                self.progress.recorded(a_won_result(result))

    async def _queued(self, client: Client) -> set[str]:
        """The match's games in the queue (waiting for a worker, or being played), by key."""
        entries: Any = await client.xrange(STREAM)
        tournament = self.spec.id.encode()
        return {
            fields[b"key"].decode()
            for _, fields in entries
            if fields.get(b"tournament") == tournament and b"key" in fields
        }

    async def _add(self, client: Client, games: list[Pairing]) -> int:
        """Queue ``games``, and remember them; how many were queued."""
        queued = await queue_games(client, self.spec, games)
        self.sent.update((pairing.key, pairing) for pairing in games)
        return queued

    async def _check_redis(self, queued: set[str], now: float) -> None:
        """Has Redis restarted since the games were queued? The games it may have lost are
        suspects: queued again unless finished or played before long."""
        run = await self.link.attempt(run_id)
        if run is None or run == self.redis_run:
            return
        self.redis_run = run
        finished = await asyncio.to_thread(self.records.finished_pairings, self.spec.id)
        known = finished | queued
        lost = [game for key, game in self.sent.items() if key not in known]
        self.suspects.suspect(lost, now)
        self.progress.say(f"tavern: Redis restarted: {len(lost)} games not in its queue")

    async def _requeue(self, playing: set[str], now: float) -> None:
        """Queue again the games Redis lost that no worker played since."""
        if not self.suspects:
            return
        finished = await asyncio.to_thread(self.records.finished_pairings, self.spec.id)
        due = self.suspects.due(finished, playing, now)
        if due and await self.link.attempt(functools.partial(self._add, games=due)) is not None:
            self.suspects.queued(due)
            self.progress.say(f"tavern: {len(due)} games queued again")


async def _drop_untaken(client: Client, spec: TournamentSpec) -> int:
    """Take the match's games no worker has taken off the queue; how many there were."""
    dropped: Any = await client.eval(DROP_UNTAKEN, 1, STREAM, GROUP, spec.id)
    return int(dropped)


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
