"""The arena: simulations by id, the TCP listener, and the routing of each message.

The arena owns every match task (in one TaskGroup) and every connection; a connection only
relays bytes and a simulation only plays its game, so a fault in either stays with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

from server.config import ArenaConfig, ListenError
from server.connection import (
    UNJOINED_INPUT_PER_ROUND,
    WRITE_BATCH_S,
    Connection,
    RoundBudget,
    WriteBatch,
)
from server.games import DEFAULT_GAME, GAMES
from server.games.base import Game, JoinRejected, JsonObject
from server.protocol import error_message
from server.replay import frames, game_of
from server.simulation import (
    Listener,
    MatchLimits,
    Removed,
    SeatsChanged,
    Simulation,
    Status,
    Update,
)

log = logging.getLogger(__name__)

ID_ALPHABET = "0123456789abcdefghijklmnopqr"  # the original's ids: base 28, 7 characters
MAX_SEED = 2**53 - 1  # seeds must survive a JavaScript client's number type
WRONG_SIMULATION_ID = "Wrong simulation ID"
TOO_MANY_SIMULATIONS = "Too many simulations"
CLOSE_WAIT_S = 2.0
LISTEN_BACKLOG = 4096  # bursts of connections (a load test, a tournament) must not be refused
SHUTTING_DOWN = "Server shutting down"


class Arena:
    """Everything a running server holds."""

    def __init__(self, config: ArenaConfig) -> None:
        self.config = config
        self.simulations: dict[str, Simulation] = {}
        self.connections: set[Connection] = set()
        self.tcp_port: int | None = None
        self._matches: asyncio.TaskGroup | None = None
        self._match_tasks: set[asyncio.Task[None]] = set()
        self._connection_tasks: set[asyncio.Task[Any]] = set()
        self._per_address: Counter[str] = Counter()
        self.listeners: list[Listener] = []  # the visor and the records follow every game
        self.write_batch = WriteBatch(WRITE_BATCH_S)
        self.unjoined_input = RoundBudget(UNJOINED_INPUT_PER_ROUND)
        self._games: dict[str, Game[Any, Any]] = {
            name: factory(config) for name, factory in GAMES.items()
        }
        # Waiting simulations by the address that created them (for its cap), and since when
        # each waiting simulation has had nobody in it (for its expiry).
        self._creators: dict[str, str] = {}
        self._waiting_by_address: Counter[str] = Counter()
        self._empty_since: dict[str, float] = {}

    # --- simulations -------------------------------------------------------------------------
    def new_simulation_id(self) -> str:
        while True:
            first = secrets.choice(ID_ALPHABET[:9])
            rest = "".join(secrets.choice(ID_ALPHABET) for _ in range(6))
            simulation_id = first + rest
            if simulation_id not in self.simulations:
                return simulation_id

    def create_simulation(
        self,
        game_name: str,
        seed: int | None = None,
        *,
        created_by_join: bool = False,
        creator: str | None = None,
    ) -> Simulation:
        """A new waiting simulation. ``creator``, the address of a bot or page that asked for
        it, may have only so many waiting at once (raises ``JoinRejected``)."""
        if creator is not None:
            most = self.config.max_waiting_simulations_per_address
            if self._waiting_by_address[creator] >= most:
                raise JoinRejected(
                    TOO_MANY_SIMULATIONS, f"at most {most} waiting simulations from one address"
                )
        simulation = Simulation(
            self.new_simulation_id(),
            self._games[game_name],
            secrets.randbits(32) if seed is None else seed,
            self._limits(),
            created_by_join=created_by_join,
            listener=self._notify,
        )
        self.simulations[simulation.id] = simulation
        if creator is not None:
            self._creators[simulation.id] = creator
            self._waiting_by_address[creator] += 1
        self._notify(simulation, SeatsChanged())
        return simulation

    def _no_longer_waiting(self, simulation: Simulation) -> None:
        """It started or was dropped: its creator may create another; it cannot expire."""
        self._empty_since.pop(simulation.id, None)
        creator = self._creators.pop(simulation.id, None)
        if creator is not None:
            self._waiting_by_address[creator] -= 1
            if not self._waiting_by_address[creator]:
                del self._waiting_by_address[creator]

    def _limits(self) -> MatchLimits:
        return MatchLimits(
            turn_timeout_s=self.config.turn_timeout_ms / 1000,
            max_consecutive_timeouts=self.config.max_consecutive_timeouts,
            first_turn_timeout_s=self.config.first_turn_timeout_ms / 1000,
            reconnect_grace_s=self.config.reconnect_grace_ms / 1000,
        )

    def _notify(self, simulation: Simulation, update: Update) -> None:
        if isinstance(update, SeatsChanged) and simulation.status is Status.WAITING:
            if simulation.is_empty():
                self._empty_since.setdefault(simulation.id, time.monotonic())
            else:
                self._empty_since.pop(simulation.id, None)
        for listener in self.listeners:
            try:
                listener(simulation, update)
            except Exception:  # a broken observer must not stop a game
                log.exception("listener failed on %s for %s", update, simulation.id)

    @property
    def games(self) -> list[str]:
        return sorted(self._games)

    def game(self, name: str) -> Game[Any, Any]:
        return self._games[name]

    def restore_simulation(self, record: JsonObject) -> Simulation:
        """A recorded, unfinished game made live again, waiting for its players to sit down.

        Its turns are replayed through the pure rules, so the position and the random
        generator are exactly where the game stopped; new turns continue its record.
        """
        if record["id"] in self.simulations:
            raise JoinRejected("Already live", f"simulation {record['id']} is being played")
        rng = random.Random(record["seed"])
        *_, last = frames(record, rng)
        game = game_of(record)
        simulation = Simulation(
            record["id"],
            game,
            record["seed"],
            self._limits(),
            listener=self._notify,
        )
        simulation.resume(last.state, len(record["turns"]), rng)
        self.simulations[simulation.id] = simulation
        self._notify(simulation, SeatsChanged())
        return simulation

    def start_match(self, simulation: Simulation) -> None:
        if self._matches is None:
            raise RuntimeError("the arena is not serving")
        self._no_longer_waiting(simulation)
        task = self._matches.create_task(
            simulation.run(self._finished), name=f"match-{simulation.id}"
        )
        self._match_tasks.add(task)
        task.add_done_callback(self._match_tasks.discard)

    def _finished(self, simulation: Simulation) -> None:
        self.simulations.pop(simulation.id, None)

    def _random_waiting(self, game_name: str, request: JsonObject) -> Simulation | None:
        """A waiting simulation of this game that can seat the request; half-full ones first."""
        candidates = [
            simulation
            for simulation in self.simulations.values()
            if simulation.status is Status.WAITING
            and simulation.game.name == game_name
            and not simulation.is_full()
            and _can_seat(simulation, request)
        ]
        candidates.sort(key=lambda simulation: simulation.is_empty())
        return candidates[0] if candidates else None

    # --- messages ----------------------------------------------------------------------------
    def handle(self, connection: Connection, message: JsonObject) -> None:
        """Route one message from a connection."""
        kind = message["type"]
        if kind == "create-simulation":
            self._create(connection, message)
        elif kind == "join-simulation":
            self._join(connection, message)
        elif kind == "player-turn":
            if connection.seat is None:
                connection.send(error_message("Not in a game", "join a simulation first"))
                return
            simulation, seat = connection.seat
            simulation.submit(seat, message, connection)
        elif kind == "rejoin":
            self._rejoin(connection, message)
        else:
            connection.send(error_message("Unknown message type", f"unknown type {kind!r}"))

    def _game_name(self, connection: Connection, message: JsonObject) -> str | None:
        name = message.get("game", DEFAULT_GAME)
        if name is None:
            name = DEFAULT_GAME
        if not isinstance(name, str) or name not in self._games:
            known = ", ".join(sorted(self._games))
            connection.send(error_message("Unknown game", f"game must be one of: {known}"))
            return None
        return str(name)

    def _seed(self, connection: Connection, message: JsonObject) -> tuple[bool, int | None]:
        seed = message.get("seed")
        if seed is None:
            return True, None
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            connection.send(
                error_message("Invalid seed", f"seed must be an integer from 0 to {MAX_SEED}")
            )
            return False, None
        return True, seed

    def _create(self, connection: Connection, message: JsonObject) -> None:
        game_name = self._game_name(connection, message)
        valid, seed = self._seed(connection, message)
        if game_name is None or not valid:
            return
        limit = self.config.max_simulations_per_connection
        if connection.simulations_created >= limit:
            connection.refuse(TOO_MANY_SIMULATIONS, f"at most {limit} per connection")
            return
        try:
            simulation = self.create_simulation(game_name, seed, creator=connection.address)
        except JoinRejected as rejected:
            connection.send(error_message(rejected.message, rejected.reason))
            return
        connection.simulations_created += 1
        connection.send(simulation.game.ready_message(simulation.id, simulation.seed))

    def _join(self, connection: Connection, message: JsonObject) -> None:
        if connection.seat is not None:
            connection.send(error_message("Already in a game", "one game per connection"))
            return
        simulation_id = message.get("simulationId")
        if simulation_id:
            simulation = (
                self.simulations.get(simulation_id) if isinstance(simulation_id, str) else None
            )
            if simulation is None:
                connection.send(error_message(WRONG_SIMULATION_ID))
                return
            named_game = message.get("game")
            if named_game is not None and named_game != simulation.game.name:
                connection.send(
                    error_message(
                        "Wrong game", f"simulation {simulation.id} is a {simulation.game.name} game"
                    )
                )
                return
        else:
            game_name = self._game_name(connection, message)
            valid, seed = self._seed(connection, message)
            if game_name is None or not valid:
                return
            try:
                simulation = self._random_waiting(game_name, message) or self.create_simulation(
                    game_name, seed, created_by_join=True, creator=connection.address
                )
            except JoinRejected as rejected:
                connection.send(error_message(rejected.message, rejected.reason))
                return
        try:
            seat = simulation.join(connection, message)
        except JoinRejected as rejected:
            connection.send(error_message(rejected.message, rejected.reason))
            if simulation.created_by_join:
                self.drop_if_abandoned(simulation)
            return
        connection.seat = (simulation, seat)
        if simulation.is_full():
            self.start_match(simulation)

    def _rejoin(self, connection: Connection, message: JsonObject) -> None:
        """A bot that lost its connection takes its seat back with the seat's token."""
        if connection.seat is not None:
            connection.send(error_message("Already in a game", "one game per connection"))
            return
        simulation_id = message.get("simulationId")
        simulation = self.simulations.get(simulation_id) if isinstance(simulation_id, str) else None
        if simulation is None:
            connection.send(error_message(WRONG_SIMULATION_ID))
            return
        try:
            seat = simulation.rejoin(connection, message.get("token"))
        except JoinRejected as rejected:
            connection.send(error_message(rejected.message, rejected.reason))
            return
        connection.seat = (simulation, seat)

    def disconnected(self, connection: Connection) -> None:
        """A connection ended: its seat is freed or forfeited."""
        if connection in self.connections:
            self.connections.discard(connection)
            self._per_address[connection.address] -= 1
            if not self._per_address[connection.address]:
                del self._per_address[connection.address]
        if connection.seat is None:
            return
        simulation, seat = connection.seat
        simulation.leave(seat, connection)
        if simulation.created_by_join:
            self.drop_if_abandoned(simulation)

    def drop_if_abandoned(self, simulation: Simulation) -> None:
        """Forget a simulation whose last waiting player left before it started."""
        if simulation.status is Status.WAITING and simulation.is_empty():
            self._drop(simulation)

    def _drop(self, simulation: Simulation) -> None:
        if self.simulations.pop(simulation.id, None) is not None:
            self._no_longer_waiting(simulation)
            self._notify(simulation, Removed())

    async def _expire_waiting(self) -> None:
        """Drop the simulations nobody has been in for ``waitingSimulationExpiryMs``, so
        abandoned ones leave the lobby and cannot pile up."""
        expiry_s = self.config.waiting_simulation_expiry_ms / 1000
        while True:
            await asyncio.sleep(min(max(expiry_s / 4, 0.01), 5.0))
            now = time.monotonic()
            for simulation_id, since in list(self._empty_since.items()):
                simulation = self.simulations.get(simulation_id)
                if simulation is not None and now - since >= expiry_s:
                    log.info("simulation %s expired: nobody joined", simulation_id)
                    self._drop(simulation)

    # --- TCP ---------------------------------------------------------------------------------
    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        connection = Connection(reader, writer, self)
        config = self.config
        same_address = self._per_address[connection.address]
        if len(self.connections) >= config.max_connections:
            connection.refuse("Too many connections", f"the arena takes {config.max_connections}")
        elif same_address >= config.max_connections_per_address:
            connection.refuse(
                "Too many connections",
                f"at most {config.max_connections_per_address} from one address",
            )
        self.connections.add(connection)
        self._per_address[connection.address] += 1
        task = asyncio.current_task()
        assert task is not None
        self._connection_tasks.add(task)
        try:
            await connection.serve()
        finally:
            self._connection_tasks.discard(task)

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[Arena]:
        """Listen for bots until the block exits; then stop every match and connection."""
        try:
            server = await asyncio.start_server(
                self._on_connection,
                self.config.host,
                self.config.port,
                reuse_address=True,
                backlog=LISTEN_BACKLOG,
            )
        except OSError as error:
            raise ListenError(
                "bots",
                self.config.host,
                self.config.port,
                error,
                '--port N (or "port" in config.json)',
            ) from error
        self.tcp_port = server.sockets[0].getsockname()[1]
        log.info("bots connect to %s:%s", self.config.host, self.tcp_port)
        try:
            async with server, asyncio.TaskGroup() as matches:
                self._matches = matches
                expiring = asyncio.create_task(self._expire_waiting(), name="expiry")
                try:
                    yield self
                finally:
                    expiring.cancel()
                    server.close()  # stop accepting before anything else
                    # Tell every bot why its connection is about to close, then stop the
                    # games; matches never raise (see Simulation.run), so only this stops them.
                    for connection in list(self.connections):
                        connection.refuse(SHUTTING_DOWN, "the arena is stopping")
                    for task in list(self._match_tasks):
                        task.cancel()
        finally:
            self._matches = None
            # Connections flush what they were told and close on their own; give them a moment.
            if self._connection_tasks:
                await asyncio.wait(self._connection_tasks, timeout=CLOSE_WAIT_S)
            for connection in list(self.connections):
                connection.writer.transport.abort()
            if self._connection_tasks:
                await asyncio.wait(self._connection_tasks, timeout=CLOSE_WAIT_S)


def _can_seat(simulation: Simulation, request: JsonObject) -> bool:
    try:
        simulation.game.choose_seat(simulation.free_seats(), request)
    except JoinRejected:
        return False
    return True
