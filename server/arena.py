"""The arena: every match by id, opened and run the one way every front end uses.

``Arena.open(game, options)`` opens a match; players then take its seats with ``match.seat``
and it starts itself once full. The arena owns every match's task (in one TaskGroup, while
``running``), tells every listener what each match did, caps what one address may leave
waiting, and drops what nobody joins. It knows no transport: the TCP server, the pages, the
Thud HTTP API and the tournaments are all above it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import secrets
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from server.challenges import Challenge, ChallengeBoard
from server.clock import Clock, LoopClock
from server.config import ArenaConfig
from server.errors import ALREADY_LIVE, BotError, Rejected
from server.games import GAMES
from server.games.base import AnyCodec, JoinRejected, JsonObject, TimeBank
from server.holdings import BotHoldings, CreatorCaps, SeekLedger
from server.identity import Roster
from server.ladder import Seeker, SeekPool
from server.match import Match, MatchEnd
from server.match_events import (
    GameFinished,
    GameStarted,
    Listener,
    Removed,
    SeatsChanged,
    TurnPlayed,
    Update,
)
from server.match_options import MatchLimits, MatchOptions, Resume, limits_of
from server.match_views import Status, TurnResult
from server.replay import ORIGIN_KEY, frames, game_of

log = logging.getLogger(__name__)

ID_ALPHABET = "0123456789abcdefghijklmnopqr"  # the original's ids: base 28, 7 characters
MAX_SEED = 2**53 - 1  # seeds must survive a JavaScript client's number type


def random_id() -> str:
    """Seven characters of the original's alphabet, the first of its first nine."""
    return secrets.choice(ID_ALPHABET[:9]) + "".join(secrets.choice(ID_ALPHABET) for _ in range(6))


@dataclass(frozen=True, slots=True)
class Standing:
    """A registered bot as a seek or a challenge of it checks it, across the arena."""

    games: int  # what it holds: games not finished, and seeks waiting
    last_opponent: str | None = None  # of its last ladder game
    had_first_seat: bool = False  # in that game


class RemotePeer(Protocol):
    """A connection on this node that plays, through the arena's other nodes, a seat of a match
    another node plays (see ``Elsewhere``)."""

    def send_data(self, data: bytes) -> None:
        """What the seat is sent, in wire form, unchanged."""

    def remote_seated(self) -> None:
        """The other node gave it the seat."""

    def remote_refused(self, message: str, reason: str | None) -> None:
        """The other node refused the seat, saying why (as it would to a local player)."""

    def close(self) -> None:
        """The seat's channel was closed: the seat was taken by a rejoin, or lost with the node
        that played it."""

    def ended(self) -> None:
        """The seat's game is over: its channel closed at the end."""

    def round_trip_s(self) -> float | None:
        """The round trip of the client's connection, as its front end measures it (passed on
        with each move: ``server.round_trip``)."""


class RandomJoiner(RemotePeer, Protocol):
    """A connection on this node whose random join the other nodes help to place."""

    def open_here(self, simulation_id: str | None) -> None:
        """Join a waiting match here, or open one with this id (any id, if None)."""


class SeatHandle(Protocol):
    """A client's seat, as its session holds it: here (``server.session.LocalSeat``), or asked
    for or taken on another node (``server.cluster``)."""

    @property
    def playing(self) -> bool:
        """Its game has not finished."""

    def submit(self, message: JsonObject) -> TurnResult | None:
        """A message for the match (a move), played the ordinary way on its node: the turn it
        played, if it was played here."""

    def leave(self) -> None:
        """The client is gone."""


class SeekTaker(Protocol):
    """A client whose seek waits in the pool (``server.session.Session``)."""

    def paired(self, match: Match, seat: int) -> None:
        """The pool paired the seek: take ``seat`` of ``match``, a new one of its game."""

    def paired_elsewhere(self, simulation_id: str) -> None:
        """The pool paired the seek into a match another node plays: ask it for the seat."""


class Elsewhere(Protocol):
    """The arena's other nodes, when it has any (``server.cluster``): the matches they play can
    be joined, rejoined and found by a random join through this node."""

    def seat(
        self,
        peer: RemotePeer,
        simulation_id: str,
        message: JsonObject,
        rejoin: bool,
        kind: str = "bot",
    ) -> SeatHandle:
        """Ask the node playing ``simulation_id`` to seat ``peer`` (or to give its seat back,
        for a rejoin), as a player of this kind (``SeatRequest.kind``); the answer comes
        through ``peer``."""

    def waiting(self, game: str, fields: JsonObject) -> str | None:
        """The id of a waiting match of this game on another node that could seat the request."""

    def seek(self, seeker: Seeker, taker: SeekTaker) -> None:
        """Put a seek in the pool every node pairs from (``server.cluster.seeks``)."""

    def unseek(self, seeker_id: str) -> None:
        """Withdraw a seek of this node's."""

    def challenge(self, challenge: Challenge) -> None:
        """Send a challenge to its opponent on whichever node it is present; its ``answer``
        is called with the match's id, or with why not."""

    def present(self, bot: str) -> None:
        """A bot is present here (``server.challenges``): other nodes may challenge it."""

    async def online(self, bots: list[str]) -> set[str]:
        """Those of these bots present on another node."""

    async def standing(self, bot: str) -> Standing:
        """What a registered bot holds on the other nodes, and its last ladder game in the
        arena (``last_opponent`` None if not known)."""

    def held(self, bot: str, games: int) -> None:
        """A registered bot holds this many games and seeks here now."""

    def paired(self, first: str, second: str) -> None:
        """Two bots were paired, ``first`` in the first seat: the arena remembers it."""

    def random_join(self, peer: RandomJoiner, game: str, message: JsonObject) -> SeatHandle:
        """A random join that found no waiting match anywhere: the nodes agree, atomically, on
        which of them opens the one match the random joins arriving at that moment share.
        ``peer`` is told to open it (``open_here``), or is seated in another node's."""


class _CountedSeek:
    """A seek's taker, through which the arena learns that the seek was paired."""

    def __init__(self, arena: Arena, seeker_id: str, taker: SeekTaker) -> None:
        self.arena = arena
        self.seeker_id = seeker_id
        self.taker = taker

    def paired(self, match: Match, seat: int) -> None:
        self.arena.seek_ended(self.seeker_id)
        self.taker.paired(match, seat)

    def paired_elsewhere(self, simulation_id: str) -> None:
        self.arena.seek_ended(self.seeker_id)
        self.taker.paired_elsewhere(simulation_id)


class WaitingIndex:
    """Waiting simulations by game and free seat, half-full ones apart from empty ones, each
    in the order it came to be there: a random join finds its simulation without looking at
    the others, however many wait."""

    def __init__(self) -> None:
        self._buckets: dict[tuple[str, int, bool], dict[str, int]] = {}
        self._keys: dict[str, list[tuple[str, int, bool]]] = {}
        self._order = itertools.count()

    def update(self, simulation_id: str, game: str, seats: int, free: Sequence[int]) -> None:
        """Where a simulation now stands: ``free`` are its free seats (none: it waits no more)."""
        self.remove(simulation_id)
        if not free:
            return
        half_full = len(free) < seats
        keys = [(game, seat, half_full) for seat in free]
        at = next(self._order)
        for key in keys:
            self._buckets.setdefault(key, {})[simulation_id] = at
        self._keys[simulation_id] = keys

    def remove(self, simulation_id: str) -> None:
        for key in self._keys.pop(simulation_id, ()):
            bucket = self._buckets[key]
            del bucket[simulation_id]
            if not bucket:
                del self._buckets[key]

    def find(self, game: str, seats: Sequence[int]) -> str | None:
        """The simulation a request for one of ``seats`` takes: one where a player already
        waits (the longest waiting first), else an empty one."""
        for half_full in (True, False):
            firsts = [
                next(iter(bucket.items()))
                for seat in seats
                if (bucket := self._buckets.get((game, seat, half_full)))
            ]
            if firsts:
                return min(firsts, key=lambda entry: entry[1])[0]
        return None

    def __len__(self) -> int:
        return len(self._keys)


class Arena:
    """Every match of a running server, and who listens to them."""

    def __init__(self, config: ArenaConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock: Clock = clock or LoopClock()  # every match's
        self.bot_port: int | None = None  # the TCP port bots connect to, once it listens
        self.matches: dict[str, Match] = {}
        self.listeners: list[Listener] = []  # the visor, the records, the Thud API...
        self.elsewhere: Elsewhere | None = None  # the other nodes, when the arena has any
        # Draining before a restart (SIGUSR1): no new simulation opens here (server.session).
        self.draining = False
        # Nor while the records cannot take more (their database away for so long that the
        # writes kept for it nearly fill the journal: ``server.records.writer.Writer.full``);
        # the command that opens the records says so here.
        self.records_full: Callable[[], bool] = lambda: False
        # Ends every new game's id: a node's own tag where several nodes share one database
        # (``Records.id_tag``), so that no two of them give a game the same id.
        self.id_tag = ""
        self.roster = Roster(
            self.clock,
            registration_open=config.registration == "open",
            registrations_per_hour=config.registrations_per_hour,
        )
        self.seeks = SeekPool(self.clock, self._meet)
        self.challenges = ChallengeBoard(
            self.clock,
            config.challenge_timeout_ms / 1000,
            config.max_open_challenges_per_bot,
            config.max_open_challenges_to_bot,
        )
        self.roster.on_barred = self.challenges.barred
        self._seek_takers: dict[str, SeekTaker] = {}
        # Each seeking bot's last ladder game here: its opponent, and whether it had the first
        # seat (the pool avoids rematches and alternates sides).
        self._last_games: dict[str, tuple[str, bool]] = {}
        self._held = BotHoldings(self._held_changed)
        self._seek_ledger = SeekLedger(config, self.clock, self._held)
        self._codecs: dict[str, AnyCodec] = {
            name: game.codec_for(config.game_settings[name]) for name, game in GAMES.items()
        }
        self._tasks: asyncio.TaskGroup | None = None
        self._match_tasks: set[asyncio.Task[None]] = set()
        self._creators = CreatorCaps(config.max_waiting_simulations_per_address)
        self._empty_since: dict[str, float] = {}  # since when a waiting match has nobody in it
        self._waiting = WaitingIndex()

    @property
    def games(self) -> list[str]:
        return sorted(self._codecs)

    def codec(self, name: str) -> AnyCodec:
        return self._codecs[name]

    def limits(self, bank: TimeBank | None = None, charge_think: bool = False) -> MatchLimits:
        """The clock's rules for a match opened without limits of its own (``limits_of``)."""
        return limits_of(self.config, bank, charge_think)

    # --- matches -------------------------------------------------------------------------------
    def open(self, game: str, options: MatchOptions | None = None) -> Match:
        """A new match waiting for its players. ``options.creator``, the address of a bot or page
        that asked for it, may have only so many waiting at once (raises ``JoinRejected``)."""
        options = options or MatchOptions()
        return self._open(options.codec or self._codecs[game], options)

    def _open(self, codec: AnyCodec, options: MatchOptions) -> Match:
        creator = options.creator
        if creator is not None and not self._creators.check(creator):
            most = self._creators.most
            reason = f"at most {most} waiting simulations from one address"
            raise JoinRejected(BotError.TOO_MANY_SIMULATIONS, reason)
        match = Match(
            options.match_id or self.new_id(),
            codec,
            secrets.randbits(32) if options.seed is None else options.seed,
            options.limits or self.limits(),
            options,
            self._notify,
            self._start,
            self.clock,
        )
        self.matches[match.id] = match
        if creator is not None:
            self._creators.opened(match.id, creator)
        self._notify(SeatsChanged(match.view()))
        return match

    def restore(self, record: JsonObject, options: MatchOptions | None = None) -> Match:
        """A recorded, unfinished game made live again, waiting for its players: its turns
        replayed through the pure rules (the position and the random generator where the game
        stopped), new turns continuing its record. Raises ``server.replay.DamagedRecord``."""
        if record["id"] in self.matches:
            raise JoinRejected(ALREADY_LIVE, f"simulation {record['id']} is being played")
        rng = random.Random(record["seed"])
        *_, last = frames(record, rng)
        resume = Resume(last.state, last.turn, rng, record["settings"].get(ORIGIN_KEY))
        base = options or MatchOptions()
        chosen = MatchOptions(
            seed=record["seed"],
            limits=base.limits,
            hold_seats=base.hold_seats,
            tournament_id=record.get("tournament"),
            pairing=record.get("pairing"),
            resume=resume,
            match_id=record["id"],
        )
        return self._open(game_of(record), chosen)

    def occupied(self) -> int:
        """The matches someone is in: playing, or waiting with a seat taken. A waiting match
        nobody is in holds nothing (a drain does not wait for it)."""
        return len(self.matches) - len(self._empty_since)

    def get(self, match_id: object) -> Match | None:
        return self.matches.get(match_id) if isinstance(match_id, str) else None

    def waiting(self, game: str, fields: JsonObject) -> Match | None:
        """A waiting match of this game that can seat the request; half-full ones first.
        A request no match could seat (a bad nick, an unknown side) raises ``JoinRejected``
        before anything is looked up."""
        codec = self._codecs[game]
        codec.player_from_join(fields)
        found = self._waiting.find(game, codec.wanted_seats(fields))
        return None if found is None else self.matches.get(found)

    def creator_left(self, match_ids: list[str]) -> None:
        """The client that created these matches is gone: those still waiting no longer count
        against its address. They stay joinable by id until they start or expire (a bot may
        create a game for others); an address keeps ``maxWaitingSimulationsPerAddress`` of
        them at most, the oldest with nobody in it dropped for each one more."""
        for match_id in match_ids:
            creator = self._creators.creator_of(match_id)
            waiting = (self.matches.get(orphan) for orphan in self._creators.left(match_id))
            oldest = next((m for m in waiting if m is not None and m.is_empty()), None)
            if oldest is not None:
                most = self._creators.most
                log.info("simulation %s dropped: %s left more than %d", oldest.id, creator, most)
                self._drop(oldest)

    def drop_if_abandoned(self, match: Match) -> None:
        """Forget a match whose last waiting player left before it started."""
        if match.status is Status.WAITING and match.is_empty():
            self._drop(match)

    # --- seeks ---------------------------------------------------------------------------------
    def seek(self, seeker: Seeker, taker: SeekTaker, address: str) -> None:
        """Wait for an opponent: in the nodes' shared pool, else in this arena's own. A
        registered bot's seek counts as a game it holds until it is paired or withdrawn; one
        ``address`` may have ``maxSeeksPerAddress`` seeks waiting here, and make
        ``seeksPerAddressPerMinute`` (after a burst of ``SEEK_BURST``): a flood of seeks paired
        as fast as they come costs the node no more than that (raises ``Rejected``)."""
        registered = self.roster.get(seeker.bot) is not None
        self._seek_ledger.admit(seeker.id, address, seeker.bot if registered else None)
        counted = _CountedSeek(self, seeker.id, taker)
        if self.elsewhere is not None:
            self.elsewhere.seek(seeker, counted)
            return
        self._seek_takers[seeker.id] = counted
        self.seeks.add(seeker)

    def unseek(self, seeker_id: str) -> None:
        self.seek_ended(seeker_id)
        if self.elsewhere is not None:
            self.elsewhere.unseek(seeker_id)
            return
        self._seek_takers.pop(seeker_id, None)
        self.seeks.remove(seeker_id)

    def seek_ended(self, seeker_id: str) -> None:
        """The seek was paired or withdrawn: its bot and its address hold it no more."""
        self._seek_ledger.ended(seeker_id)

    def last_game(self, bot: str) -> tuple[str | None, bool]:
        """A bot's last ladder opponent here, and whether it had the first seat."""
        return self._last_games.get(bot, (None, False))

    async def standing(self, bot: str) -> Standing:
        """A registered bot's games and seeks, here and on the other nodes, and its last
        ladder game (the arena's, if another node paired it last)."""
        opponent, first = self.last_game(bot)
        here = Standing(self.bot_games(bot), opponent, first)
        if self.elsewhere is None:
            return here
        there = await self.elsewhere.standing(bot)
        if there.last_opponent is None:
            return Standing(here.games + there.games, opponent, first)
        return Standing(here.games + there.games, there.last_opponent, there.had_first_seat)

    async def online(self, bots: list[str]) -> set[str]:
        """Those of these bots present (connected, named) on any node of the arena."""
        found = {bot for bot in bots if self.challenges.find(bot) is not None}
        if self.elsewhere is not None and (rest := [bot for bot in bots if bot not in found]):
            found |= await self.elsewhere.online(rest)
        return found

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` as a task of the arena's (it must not raise: it would stop them all)."""
        if self._tasks is None:
            raise RuntimeError("the arena is not running")
        self._tasks.create_task(work, name=name)

    def check_open(self) -> None:
        """A draining node opens no new simulation, whoever asks (a client's session, a
        page's "Run a game"): behind a load balancer, a new connection goes to another node.
        Nor does a node whose records can take no more games for now (``records_full``)."""
        if self.draining:
            raise Rejected(
                BotError.SERVER_DRAINING,
                "this node is finishing its games before a restart: connect again to start one",
            )
        if self.records_full():
            raise Rejected(
                BotError.RECORDS_FULL,
                "this node's records database has been out of reach so long that the games "
                "waiting to be written nearly fill its journal: connect again (another node) "
                "or try later",
            )

    def bot_games(self, bot: str) -> int:
        """What a registered bot holds here: the games it sits in that have not finished, and
        its seeks waiting."""
        return self._held.games(bot)

    def _held_changed(self, bot: str) -> None:
        if self.elsewhere is not None:
            self.elsewhere.held(bot, self.bot_games(bot))

    def paired_match(self, first: Seeker, second: Seeker) -> Match:
        """The match two paired seekers play, ``first`` in the first seat (remembered, with
        the opponent, for their next pairing: here, and in the arena's Redis if any)."""
        self._last_games.update({first.bot: (second.bot, True), second.bot: (first.bot, False)})
        if self.elsewhere is not None:
            self.elsewhere.paired(first.bot, second.bot)
        return self.open(first.game, MatchOptions(rated=first.rated, by_join=True))

    def _meet(self, first: Seeker, second: Seeker) -> None:
        match = self.paired_match(first, second)
        for seat, seeker in enumerate((first, second)):
            taker = self._seek_takers.pop(seeker.id, None)
            if taker is not None:
                taker.paired(match, seat)

    def new_id(self) -> str:
        """An id no match here has, ending with the node's name (``nodeName``) if it has one."""
        tag = self.id_tag + (f"-{self.config.node_name}" if self.config.node_name else "")
        while (match_id := random_id() + tag) in self.matches:
            pass
        return match_id

    def _start(self, match: Match) -> None:
        if self._tasks is None:
            raise RuntimeError("the arena is not running")
        self._no_longer_waiting(match)
        task = self._tasks.create_task(match.run(self._finished), name=f"match-{match.id}")
        self._match_tasks.add(task)
        task.add_done_callback(self._match_tasks.discard)

    def _finished(self, match: Match) -> None:
        self.matches.pop(match.id, None)
        self._held.seated(match.id, frozenset())

    def _drop(self, match: Match) -> None:
        if self.matches.pop(match.id, None) is not None:
            self._no_longer_waiting(match)
            self._notify(Removed(match.id))

    def _no_longer_waiting(self, match: Match) -> None:
        """It started or was dropped: its creator may open another; it cannot expire."""
        self._empty_since.pop(match.id, None)
        self._creators.gone(match.id)

    def _notify(self, update: Update) -> None:
        if isinstance(update, TurnPlayed):  # by far the most frequent: nothing to keep here
            pass
        elif isinstance(update, SeatsChanged) and update.view.status is Status.WAITING:
            view = update.view
            self._held.seated(view.match_id, frozenset(p.bot for p in view.players if p and p.bot))
            if all(player is None for player in view.players):
                self._empty_since.setdefault(view.match_id, time.monotonic())
            else:
                self._empty_since.pop(view.match_id, None)
            free = [seat for seat, player in enumerate(view.players) if player is None]
            self._waiting.update(view.match_id, view.game, len(view.players), free)
        elif isinstance(update, GameStarted):
            view = update.view
            self._empty_since.pop(view.match_id, None)
            self._waiting.remove(view.match_id)
            self._held.seated(view.match_id, frozenset(p.bot for p in view.players if p and p.bot))
        elif isinstance(update, Removed | GameFinished):
            match_id = update.match_id if isinstance(update, Removed) else update.view.match_id
            self._waiting.remove(match_id)
            self._held.seated(match_id, frozenset())
            if isinstance(update, GameFinished) and update.outcome.reason is MatchEnd.VOIDED:
                for bot in {p.bot for p in update.view.players if p and p.bot}:  # played again
                    self._last_games.pop(bot, None)  # at once, not after REMATCH_AFTER_S
        for listener in self.listeners:
            try:
                listener(update)
            except Exception:  # a broken observer must not stop a game
                log.exception("listener failed on %s", type(update).__name__)

    async def _expire_waiting(self) -> None:
        """Drop the matches nobody has been in for ``waitingSimulationExpiryMs``, so abandoned
        ones leave the lobby and cannot pile up."""
        expiry_s = self.config.waiting_simulation_expiry_ms / 1000
        while True:
            await asyncio.sleep(min(max(expiry_s / 4, 0.01), 5.0))
            now = time.monotonic()
            for match_id, since in list(self._empty_since.items()):
                match = self.matches.get(match_id)
                if match is not None and now - since >= expiry_s:
                    log.info("simulation %s expired: nobody joined", match_id)
                    self._drop(match)

    # --- running -------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Arena]:
        """Play matches until the block exits; then stop every match still playing (they are
        kept as unfinished: a stopped match has no result)."""
        try:
            async with asyncio.TaskGroup() as tasks:
                self._tasks = tasks
                expiring = tasks.create_task(self._expire_waiting(), name="expiry")
                stall_s = self.config.loop_stall_void_ms / 1000
                watching = tasks.create_task(self.clock.watch_stalls(stall_s), name="stalls")
                try:
                    yield self
                finally:
                    expiring.cancel()
                    watching.cancel()
                    self.stop_matches()
        finally:
            self._tasks = None
            self.roster.close()

    def stop_matches(self) -> None:
        """End every match still playing with no result, at once (so that no player leaving
        afterwards can give it one), and cancel their tasks."""
        for match in list(self.matches.values()):
            if match.status is Status.PLAYING:
                match.stop()
        for task in list(self._match_tasks):
            task.cancel()
