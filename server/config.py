"""The arena's settings: the server's limits, and each game's section of ``config.json``.

Every key is checked at start-up, so a typo or a bad value stops the server with a message that
names the key, instead of surfacing later as a broken game. The server's own keys are read here;
each game reads its section (``"tavern": {...}``, ``"thud": {...}``) itself, and the top-level
keys of the original server's file (``width``, ``pointsToWin``, ``positions``...) as the game
that declares them (``Game.top_level_keys``); a key in a game's section wins over the same key
at the top level.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

from server.games import GAMES
from server.games.base import JsonObject
from server.games.settings import Section, SettingsError, bounded_int


class ConfigError(Exception):
    """A configuration value is missing, of the wrong type or out of range."""


class ListenError(Exception):
    """A port the arena was configured with cannot be listened on (most often: it is in use)."""

    def __init__(self, what: str, host: str, port: int, error: OSError, change: str) -> None:
        if isinstance(error, socket.gaierror):  # the host, not the port, is the problem
            problem = f"no address {host!r} here ({error.strerror})"
            change = '--host H (or "host" in config.json)'
        else:
            problem = os.strerror(error.errno) if error.errno else str(error)
        super().__init__(
            f"cannot listen for {what} on {host}:{port}: {problem}; choose another with {change}"
        )


@dataclass(frozen=True, slots=True)
class ArenaConfig:
    """Validated settings; field names are the snake_case of the JSON keys."""

    host: str = "127.0.0.1"
    port: int = 9000
    http_port: int = 8080
    turn_timeout_ms: int = 10_000
    person_turn_timeout_ms: int = 300_000
    max_consecutive_timeouts: int = 3
    max_message_bytes: int = 65_536
    message_gap_ms: int = 50
    database: str = "data/arena.db"
    # Where the records wait while the database is out of reach (None: beside an SQLite file,
    # data/records-journal for PostgreSQL), and at most how much a process keeps there.
    records_journal: str | None = None
    records_journal_bytes: int = 268_435_456
    first_turn_timeout_ms: int = 30_000
    max_connections: int = 10_000
    max_connections_per_address: int = 1_000
    max_simulations_per_connection: int = 100
    idle_timeout_ms: int = 60_000
    # What one connection may cost (server.meter): past it, it is read more slowly.
    max_input_bytes_per_second: int = 1_048_576
    max_errors_per_second: int = 20
    max_send_buffer_bytes: int = 1_048_576
    reconnect_grace_ms: int = 10_000
    # A bot's debug text reaches the pages watching its game this many turns late.
    spectator_debug_delay_turns: int = 10
    # A turn whose time ran out while the arena's event loop stalled longer than this is voided.
    loop_stall_void_ms: int = 2_000
    # A bot that asks to be pinged ("pings": true) is pinged at most this often, between its
    # turns; a game charging think time credits each reply at most this much round trip.
    ping_interval_ms: int = 1_000
    network_credit_max_ms: int = 500
    thud_api_port: int = 0  # also serve the Thud HTTP API here (0: only on httpPort)
    max_waiting_simulations_per_address: int = 100
    waiting_simulation_expiry_ms: int = 600_000  # a simulation nobody joins is dropped after this
    max_house_games: int = 16  # games between house players at once ("Run a game")
    max_house_games_per_page: int = 2
    max_thud_api_games_per_address: int = 20
    max_thud_api_games: int = 1000  # live Thud HTTP API games at once, from every address
    thud_api_unplayed_expiry_ms: int = 60_000  # an API game nobody has moved in ends after this
    max_person_house_games: int = 200  # games of a person (or /clients) against a house player
    max_person_house_games_per_address: int = 4
    # The visor: HTTP connections (websockets included) and pages (websockets), in all and per
    # address, what may wait for one page, and how long a connection may idle.
    max_http_connections: int = 2000
    max_http_connections_per_address: int = 64
    http_idle_timeout_ms: int = 5000
    max_pages: int = 1000
    max_pages_per_address: int = 32
    max_page_buffer_bytes: int = 65_536
    # The load balancers' addresses (or networks): each of their connections begins with a PROXY
    # header naming the client (server.proxy_header), whose address the per-address caps count.
    balancers: tuple[str, ...] = ()
    # "redis://HOST:PORT/DB": this process is a node of the arena shared by every node on it,
    # and tournaments queue their games there for `tavern worker`s. A Redis Cluster is named by
    # any of its servers, or several, comma-separated (a list in the config file), tried in turn.
    redis: str | None = None
    # The node's name behind the load balancer (its ``server`` in deploy/haproxy.cfg): the ids
    # of the games it creates end with it, so that a join by id reaches it (docs/operations.md).
    node_name: str = ""
    node_heartbeat_ms: int = 1000  # how often a node says it is alive and refreshes its games
    node_ttl_ms: int = 3000  # a node silent this long is dead: its games leave every lobby
    # A draining node (SIGUSR1) stops after this even if games still play (kept unfinished),
    # and not before this, so that its load balancer has seen its /readyz fail.
    drain_timeout_ms: int = 600_000
    drain_notice_ms: int = 3000
    # "open": bots may register themselves over TCP; "organiser": only `tavern bots add`.
    registration: str = "organiser"
    registrations_per_hour: int = 100  # the whole arena's, with "open": a bucket of that many
    max_games_per_bot: int = 10  # games a registered bot may hold at once (seeks, challenges)
    max_seeks_per_address: int = 100  # seeks waiting at once from one address, on one node
    seeks_per_address_per_minute: int = 120  # seeks one address may make on one node (a burst)
    challenge_timeout_ms: int = 30_000  # a challenge unanswered this long is declined
    # Challenges waiting for an answer: those one bot sent (through one node), and those offered
    # to one bot; past either, a challenge is refused to its sender and never reaches the target.
    max_open_challenges_per_bot: int = 10
    max_open_challenges_to_bot: int = 20
    # Each game's settings by its name, checked, as its records keep them (``Game.settings``).
    game_settings: dict[str, JsonObject] = dataclasses.field(
        default_factory=lambda: {name: game.default_settings() for name, game in GAMES.items()}
    )

    def with_overrides(self, **changes: Any) -> ArenaConfig:
        """A copy with command-line overrides applied (``None`` means not given)."""
        given = {name: value for name, value in changes.items() if value is not None}
        return dataclasses.replace(self, **given)

    def with_turn_limit(self, game: str, turns: int) -> ArenaConfig:
        """A copy where ``game`` ends on points after ``turns`` turns (``tavern play --turns``)."""
        limited = GAMES[game].with_turn_limit(self.game_settings[game], turns)
        return dataclasses.replace(self, game_settings={**self.game_settings, game: limited})


# JSON key -> (field name, minimum, maximum) for the integer settings.
_INT_KEYS: dict[str, tuple[str, int, int]] = {
    "port": ("port", 0, 65535),
    "httpPort": ("http_port", 0, 65535),
    "turnTimeoutMs": ("turn_timeout_ms", 1, 3_600_000),
    "personTurnTimeoutMs": ("person_turn_timeout_ms", 1, 24 * 3_600_000),
    "maxConsecutiveTimeouts": ("max_consecutive_timeouts", 1, 1000),
    "maxMessageBytes": ("max_message_bytes", 256, 64 * 1024 * 1024),
    "messageGapMs": ("message_gap_ms", 0, 10_000),
    "firstTurnTimeoutMs": ("first_turn_timeout_ms", 1, 3_600_000),
    "maxConnections": ("max_connections", 1, 1_000_000),
    "maxConnectionsPerAddress": ("max_connections_per_address", 1, 1_000_000),
    "maxSimulationsPerConnection": ("max_simulations_per_connection", 1, 1_000_000),
    "idleTimeoutMs": ("idle_timeout_ms", 1, 24 * 3_600_000),
    "maxInputBytesPerSecond": ("max_input_bytes_per_second", 1024, 1 << 30),
    "maxErrorsPerSecond": ("max_errors_per_second", 1, 1_000_000),
    "maxSendBufferBytes": ("max_send_buffer_bytes", 4096, 1 << 30),
    "reconnectGraceMs": ("reconnect_grace_ms", 0, 3_600_000),
    "spectatorDebugDelayTurns": ("spectator_debug_delay_turns", 1, 100_000),
    "loopStallVoidMs": ("loop_stall_void_ms", 100, 3_600_000),
    "pingIntervalMs": ("ping_interval_ms", 10, 3_600_000),
    "networkCreditMaxMs": ("network_credit_max_ms", 0, 60_000),
    "thudApiPort": ("thud_api_port", 0, 65535),
    "maxWaitingSimulationsPerAddress": ("max_waiting_simulations_per_address", 1, 1_000_000),
    "waitingSimulationExpiryMs": ("waiting_simulation_expiry_ms", 1, 7 * 24 * 3_600_000),
    "maxHouseGames": ("max_house_games", 0, 100_000),
    "maxHouseGamesPerPage": ("max_house_games_per_page", 0, 100_000),
    "maxThudApiGamesPerAddress": ("max_thud_api_games_per_address", 1, 1_000_000),
    "maxThudApiGames": ("max_thud_api_games", 1, 1_000_000),
    "thudApiUnplayedExpiryMs": ("thud_api_unplayed_expiry_ms", 1, 24 * 3_600_000),
    "maxPersonHouseGames": ("max_person_house_games", 0, 100_000),
    "maxPersonHouseGamesPerAddress": ("max_person_house_games_per_address", 0, 100_000),
    "maxHttpConnections": ("max_http_connections", 1, 1_000_000),
    "maxHttpConnectionsPerAddress": ("max_http_connections_per_address", 1, 1_000_000),
    "httpIdleTimeoutMs": ("http_idle_timeout_ms", 100, 3_600_000),
    "maxPages": ("max_pages", 1, 1_000_000),
    "maxPagesPerAddress": ("max_pages_per_address", 1, 1_000_000),
    "maxPageBufferBytes": ("max_page_buffer_bytes", 16_384, 1 << 30),
    "nodeHeartbeatMs": ("node_heartbeat_ms", 10, 60_000),
    "nodeTtlMs": ("node_ttl_ms", 50, 600_000),
    "drainTimeoutMs": ("drain_timeout_ms", 1, 7 * 24 * 3_600_000),
    "drainNoticeMs": ("drain_notice_ms", 0, 3_600_000),
    "maxGamesPerBot": ("max_games_per_bot", 1, 100_000),
    "registrationsPerHour": ("registrations_per_hour", 1, 1_000_000),
    "maxSeeksPerAddress": ("max_seeks_per_address", 1, 1_000_000),
    "seeksPerAddressPerMinute": ("seeks_per_address_per_minute", 1, 1_000_000),
    "challengeTimeoutMs": ("challenge_timeout_ms", 100, 3_600_000),
    "maxOpenChallengesPerBot": ("max_open_challenges_per_bot", 1, 10_000),
    "maxOpenChallengesToBot": ("max_open_challenges_to_bot", 1, 10_000),
    "recordsJournalBytes": ("records_journal_bytes", 4096, 1 << 40),
}
_STR_KEYS: dict[str, str] = {
    "host": "host",
    "database": "database",
    "nodeName": "node_name",
    "recordsJournal": "records_journal",
}
NODE_NAME = re.compile(r"[a-z0-9]{1,16}")
REGISTRATION = ("organiser", "open")
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
KNOWN_KEYS = (
    frozenset(_INT_KEYS)
    | frozenset(_STR_KEYS)
    | frozenset({"registration", "balancers", "redis"})
    | frozenset(GAMES)
    | frozenset(key for game in GAMES.values() for key in game.top_level_keys)
)


def load_config(path: Path | None) -> ArenaConfig:
    """Read and validate a config file; ``None`` gives the defaults. Its records file
    (``database``, when a path and not a URL), if relative, is relative to the file's folder,
    not to the current one: every command that reads the file finds the same records."""
    if path is None:
        return ArenaConfig()
    try:
        raw = orjson.loads(path.read_bytes())
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from error
    except orjson.JSONDecodeError as error:
        raise ConfigError(f"{path}: not valid JSON: {error}") from error
    try:
        config = config_from_mapping(raw)
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from error
    if "://" in config.database or Path(config.database).is_absolute():
        return config
    return dataclasses.replace(config, database=str(path.parent / config.database))


def config_from_mapping(raw: object) -> ArenaConfig:
    """Validate a decoded config object; missing keys take their defaults."""
    if not isinstance(raw, Mapping):
        raise ConfigError("the config must be a JSON object")
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r} (known keys: {', '.join(sorted(KNOWN_KEYS))})"
        )
    values: dict[str, Any] = {}
    for key, (field, low, high) in _INT_KEYS.items():
        if key in raw:
            values[field] = _int_in_range(key, raw[key], low, high)
    for key, field in _STR_KEYS.items():
        if key in raw:
            value = raw[key]
            if not isinstance(value, str) or not value:
                raise ConfigError(f"key {key!r}: must be a non-empty string, got {value!r}")
            values[field] = value
    if "registration" in raw:
        if raw["registration"] not in REGISTRATION:
            raise ConfigError(
                f"key 'registration': must be one of {', '.join(REGISTRATION)}, "
                f"got {raw['registration']!r}"
            )
        values["registration"] = raw["registration"]
    if "balancers" in raw:
        values["balancers"] = read_balancers(raw["balancers"])
    if "redis" in raw:
        values["redis"] = read_redis(raw["redis"])
    values["game_settings"] = read_game_settings(raw)
    config = dataclasses.replace(ArenaConfig(), **values)
    check_cluster(config)
    return config


def read_redis(value: object) -> str:
    """The arena's Redis: a URL, or a non-empty list of them (a Redis Cluster's servers),
    kept comma-separated as ``--redis`` takes them."""
    urls = [value] if isinstance(value, str) else value
    if (
        not isinstance(urls, list)
        or not urls
        or not all(isinstance(url, str) and url and "," not in url for url in urls)
    ):
        raise ConfigError(f"key 'redis': must be a URL or a non-empty list of URLs, got {value!r}")
    return ",".join(urls)


def read_balancers(value: object) -> tuple[str, ...]:
    """The balancers' addresses or networks (``"127.0.0.2"``, ``"10.0.1.0/24"``), checked."""
    if not isinstance(value, list):
        raise ConfigError(f"key 'balancers': must be a list of addresses, got {value!r}")
    networks = []
    for entry in value:
        try:
            if not isinstance(entry, str):
                raise TypeError
            networks.append(str(ipaddress.ip_network(entry, strict=False)))
        except (TypeError, ValueError):
            raise ConfigError(
                f"key 'balancers': {entry!r} is not an IP address or network"
            ) from None
    return tuple(networks)


def read_game_settings(raw: Mapping[str, Any]) -> dict[str, JsonObject]:
    """Each game's settings, read by the game from its section and its top-level keys."""
    settings = {}
    for name, game in GAMES.items():
        section = raw.get(name, {})
        if not isinstance(section, Mapping):
            raise ConfigError(f"key {name!r}: must be an object of {name}'s settings")
        values = {key: raw[key] for key in game.top_level_keys if key in raw}
        names = {key: key for key in values}
        values.update(section)
        names.update((key, f"{name}.{key}") for key in section)
        try:
            settings[name] = game.settings(Section(values, names))
        except SettingsError as error:
            raise ConfigError(str(error)) from None
    return settings


def check_cluster(config: ArenaConfig) -> None:
    """A Redis URL Redis understands, and a node that says it is alive before it is taken for
    dead."""
    for url in [] if config.redis is None else config.redis.split(","):
        if not url.startswith(REDIS_SCHEMES):
            raise ConfigError(
                f"key 'redis': must be a URL starting with {', '.join(REDIS_SCHEMES)}, got {url!r}"
            )
    if config.node_name and not NODE_NAME.fullmatch(config.node_name):
        raise ConfigError(
            f"key 'nodeName': 1 to 16 lowercase letters and digits, got {config.node_name!r}"
        )
    if config.node_ttl_ms < 2 * config.node_heartbeat_ms:
        raise ConfigError(
            f"key 'nodeTtlMs': must be at least twice nodeHeartbeatMs "
            f"({config.node_heartbeat_ms}), got {config.node_ttl_ms}"
        )


def setting_range(field: str) -> tuple[int, int]:
    """The values an integer setting may take, by its field name: a command-line flag that
    sets it is held to the config file's range."""
    for name, low, high in _INT_KEYS.values():
        if name == field:
            return low, high
    raise KeyError(field)


def _int_in_range(key: str, value: object, low: int, high: int) -> int:
    try:
        return bounded_int(value, low, high)
    except ValueError as error:
        raise ConfigError(f"key {key!r}: {error}") from None


def without_password(url: str) -> str:
    """A Redis or PostgreSQL URL (or several, comma-separated) as logs and messages may show
    it."""
    if "," in url:
        return ",".join(map(without_password, url.split(",")))
    parts = urlsplit(url)
    if parts.password is None:
        return url
    address = parts.netloc.rpartition("@")[2]  # host and port as written
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{address}"))
