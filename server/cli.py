"""The ``tavern`` command: ``tavern serve`` runs the arena."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from pathlib import Path

from server.arena import Arena
from server.config import ArenaConfig, ConfigError, load_config

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
    return parser


def config_for(args: argparse.Namespace) -> ArenaConfig:
    """The config file's settings with the command line's flags on top."""
    path = args.config
    if path is None and DEFAULT_CONFIG.exists():
        path = DEFAULT_CONFIG
    config = load_config(path)
    return config.with_overrides(host=args.host, port=args.port, http_port=args.http_port)


async def serve(config: ArenaConfig) -> None:
    arena = Arena(config)
    async with arena.serving():
        print(f"tavern: bots connect to {config.host}:{arena.tcp_port}", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        config = config_for(args)
    except ConfigError as error:
        print(f"tavern: bad configuration: {error}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(config))
    return 0
