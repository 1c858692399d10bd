"""``tavern play GAME A B``: one game between two bot commands, drawn in the terminal (or
played on from a recorded game's turn, ``--from``)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from server.config import ArenaConfig
from server.games import GAMES
from server.games.settings import TURN_LIMITS
from server.replay import DamagedRecord
from server.tournament.spec import TournamentError
from tavern_cli.config_file import DEFAULT_HELP, RecordsNote
from tavern_cli.flags import Parser, Subcommands, clock_flag, int_flag, writable_file
from tavern_cli.game_lookup import GameNotFound, load_game
from tavern_cli.play import PlayError, PlayOptions, play
from tavern_cli.signals import Stopped, until_signalled

MAX_SEED = 2**53 - 1  # a seed a page's JavaScript reads back exactly


def add(commands: Subcommands) -> Parser:
    play = commands.add_parser(
        "play",
        help="play one game between two bot commands here, drawn in the terminal",
        description="Each command may use {port}, {simulation}, {side}, {seed}, {host} and "
        "{python}, filled in as in a tournament: the first command plays the first seat "
        "(team1, dwarf), the second the other.",
    )
    play.add_argument("game", choices=sorted(GAMES))
    play.add_argument("commands", nargs=2, metavar="COMMAND", help="a bot's command, quoted")
    play.add_argument(
        "--seed", type=int_flag(0, MAX_SEED), help="the game's seed (default: a random one)"
    )
    play.add_argument(
        "--turns",
        type=int_flag(*TURN_LIMITS),
        help="end the game on points after this many turns",
    )
    play.add_argument("--output", type=writable_file, help="write the game here as JSON lines")
    play.add_argument(
        "--open", action="store_true", help="open the game in the browser; serve until Ctrl-C"
    )
    play.add_argument(
        "--config", type=Path, help=f"settings file: time limits, board ({DEFAULT_HELP})"
    )
    play.add_argument("--database", type=writable_file, help="keep the game's record in this file")
    play.add_argument(
        "--from",
        dest="from_game",
        metavar="GAME",
        help="play on from a recorded game (its id, in --database or the config's records) or "
        "a game file, after --turn N of its turns, with its random draws and its settings (the "
        "board, turn limit, time per move and clock it was played with; --config, --turns and "
        "--clock change them)",
    )
    play.add_argument(
        "--turn",
        type=int_flag(0, 1_000_000),
        default=0,
        help="with --from: the turns of that game played before this one starts (0: none)",
    )
    play.add_argument(
        "--verbose",
        action="store_true",
        help="print what each bot says of its move (its debug text) with the turn",
    )
    play.add_argument(
        "--clock",
        type=clock_flag,
        metavar="INITIAL_MS+INCREMENT_MS",
        help="a time bank per bot with an increment per move, instead of the flat time per "
        "move; a bot whose bank runs out loses (e.g. 60000+1000)",
    )
    return play


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    logging.getLogger().setLevel(logging.WARNING)  # the board is the output
    start = None
    if args.from_game is not None:
        try:
            start = load_game(config.database, args.from_game, said)
        except (GameNotFound, DamagedRecord) as error:
            print(f"tavern: --from: {error}", file=sys.stderr)
            return 2
    if args.database is not None:  # the game's record is kept there (else: a scratch file)
        said()
    options = PlayOptions(
        game=args.game,
        commands=(args.commands[0], args.commands[1]),
        seed=args.seed,
        turns=args.turns,
        output=args.output,
        open_browser=args.open,
        database=args.database,
        verbose=args.verbose,
        start=start,
        start_turn=args.turn,
        clock=args.clock,
        own_settings=args.config is not None,
    )
    try:
        finished = asyncio.run(until_signalled(play(options, config, sys.stdout)))
    except (PlayError, TournamentError) as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 2
    except Stopped as stopped:
        print("\ntavern: stopped", file=sys.stderr)
        return stopped.code
    return 0 if finished is not None else 1
