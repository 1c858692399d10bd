"""The ``tavern`` command: ``tavern serve`` runs the arena."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from server.arena import Arena
from server.config import ArenaConfig, ConfigError, load_config
from server.records import Recorder, Records
from server.replay import replay_text
from visor import app as visor

DEFAULT_CONFIG = Path("config.json")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tavern", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the arena: bots on TCP, the visor on HTTP")
    serve.add_argument(
        "--config",
        type=Path,
        help="settings file (default: ./config.json if present, else built-in defaults)",
    )
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="TCP port for bots (default 9000)")
    serve.add_argument("--http-port", type=int, help="HTTP port for the visor (default 8080)")
    replay = commands.add_parser("replay", help="print a recorded game turn by turn")
    replay.add_argument("game_id", help="the simulation id of a recorded game")
    replay.add_argument("--config", type=Path, help="settings file naming the database")
    replay.add_argument("--database", type=Path, help="records file (overrides the config)")
    return parser


def config_for(args: argparse.Namespace) -> ArenaConfig:
    """The config file's settings with the command line's flags on top."""
    path = args.config
    if path is None and DEFAULT_CONFIG.exists():
        path = DEFAULT_CONFIG
    config = load_config(path)
    overrides = {
        name: getattr(args, name, None) for name in ("host", "port", "http_port", "database")
    }
    if overrides["database"] is not None:
        overrides["database"] = str(overrides["database"])
    return config.with_overrides(**overrides)


def print_replay(database: Path, game_id: str) -> int:
    if not database.exists():
        print(f"tavern: no records file at {database}", file=sys.stderr)
        return 1
    records = Records(database)
    records.open_to_read()
    record = records.game(game_id)
    if record is None:
        print(f"tavern: no recorded game {game_id!r} in {database}", file=sys.stderr)
        return 1
    for block in replay_text(record):
        print(block)
    return 0


@contextlib.asynccontextmanager
async def recording(arena: Arena, path: Path) -> AsyncIterator[Records]:
    """Keep every game of the arena in the records file for the duration of the block."""
    records = Records(path)
    await asyncio.to_thread(records.open)
    arena.listeners.append(Recorder(records))
    try:
        yield records
    finally:
        await asyncio.to_thread(records.close)


async def serve(config: ArenaConfig) -> None:
    arena = Arena(config)
    async with (
        recording(arena, Path(config.database)) as records,
        arena.serving(),
        visor.serving(arena, config.host, config.http_port, records) as http_port,
    ):
        print(f"tavern: bots connect to {config.host}:{arena.tcp_port}", flush=True)
        print(f"tavern: watch at http://{config.host}:{http_port}/", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        config = config_for(args)
    except ConfigError as error:
        print(f"tavern: bad configuration: {error}", file=sys.stderr)
        return 2
    if args.command == "replay":
        return print_replay(Path(config.database), args.game_id)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(config))
    return 0
