"""``tavern house GAME PLAYER [--simulation ID]``: one of the arena's house players as a bot
over TCP, into a simulation by id: an opponent for a bot being written.

The lobby's "Copy the command" runs it: the ``tavern`` command the arena installs works from
any folder (``python -m bots...`` works only in the arena's own environment). It prints how the
game ended.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from bots.house_bot import play
from bots.sdk import ArenaError
from server.config import ArenaConfig
from server.games import GAMES
from tavern_cli.config_file import RecordsNote
from tavern_cli.flags import Parser, Subcommands
from tavern_cli.signals import Stopped, until_signalled


def add(commands: Subcommands) -> Parser:
    players = "; ".join(
        f"{name}: {', '.join(game.house_players)}" for name, game in sorted(GAMES.items())
    )
    house = commands.add_parser(
        "house",
        help="play one of the arena's house players into a simulation, as a bot over TCP",
        description="An opponent for your bot: one of the arena's house players joins a "
        f"simulation (by id, else a random waiting one) and plays it to its end ({players}).",
    )
    house.add_argument("game", choices=sorted(GAMES))
    house.add_argument("player", help="the house player")
    house.add_argument("--simulation", help="the simulation's id (default: a waiting one)")
    house.add_argument("--side", help="Thud: the side to take (dwarf or troll)")
    house.add_argument("--host", default="127.0.0.1", help="the arena's address")
    house.add_argument("--port", type=int, default=9000, help="the arena's TCP port for bots")
    house.add_argument("--seed", type=int, default=0, help="the house player's random choices")
    return house


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    """Plays on another arena, by its address: neither the settings nor the records matter."""
    known = GAMES[args.game].house_players
    if args.player not in known:
        print(
            f"tavern: {args.game}'s house players are {', '.join(known)}, not {args.player!r}",
            file=sys.stderr,
        )
        return 2
    game = play(args.game, args.player, args.host, args.port, args.simulation, args.side, args.seed)
    try:
        final = asyncio.run(until_signalled(game))
    except ConnectionRefusedError:
        print(f"tavern: no arena answers at {args.host}:{args.port}", file=sys.stderr)
        return 1
    except OSError as error:  # the address does not resolve, or the connection was lost
        print(f"tavern: {args.host}:{args.port}: {error.strerror or error}", file=sys.stderr)
        return 1
    except ArenaError as error:
        print(f"tavern: the arena refused: {error}", file=sys.stderr)
        return 1
    except Stopped as stopped:
        print("\ntavern: stopped", file=sys.stderr)
        return stopped.code
    result = final.get("result") or {}
    reason = result.get("reason") if isinstance(result, dict) else None
    print(f"tavern: house {args.player}: {final['type']}" + (f" ({reason})" if reason else ""))
    return 0
