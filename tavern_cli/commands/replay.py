"""``tavern replay GAME``: a recorded game, or a game file, turn by turn; or written as a game
file (``--output``), or as the positions of a positions file (``--positions``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from server.commentary import replay_result_text, replay_text
from server.config import ArenaConfig
from server.game_file import record_lines
from server.replay import DamagedRecord, TurnRange, turns_before
from tavern_cli.bot_test import positions_of
from tavern_cli.config_file import DEFAULT_HELP, RecordsNote
from tavern_cli.flags import Parser, Subcommands, turn_range, writable_file
from tavern_cli.game_lookup import GameNotFound, load_game


def add(commands: Subcommands) -> Parser:
    replay = commands.add_parser(
        "replay", help="print a recorded game, or a game file, turn by turn"
    )
    replay.add_argument(
        "game_id",
        metavar="GAME",
        help="the simulation id of a recorded game, or a game file (tavern play --output)",
    )
    replay.add_argument(
        "--config", type=Path, help=f"settings file, naming the database ({DEFAULT_HELP})"
    )
    replay.add_argument(
        "--database", help="records: a file or a postgresql:// URL (overrides the config)"
    )
    replay.add_argument(
        "--turns",
        metavar="A-B",
        type=turn_range,
        help="show only these turns: A-B, A- (to the end), -B or N",
    )
    replay.add_argument(
        "--positions",
        metavar="A-B",
        type=turn_range,
        help="print the positions after turns A to B as lines of a positions file (tavern test)",
    )
    replay.add_argument(
        "--output",
        type=writable_file,
        help="write the game here as a game file (JSON lines) instead of printing it",
    )
    return replay


def run(args: argparse.Namespace, config: ArenaConfig, said: RecordsNote) -> int:
    if args.positions is not None:
        return print_positions(config.database, args.game_id, args.positions, said)
    return print_replay(config.database, args.game_id, args.turns, args.output, said)


def print_positions(database: str, game: str, turns: TurnRange, said: RecordsNote) -> int:
    try:
        record = load_game(database, game, said)
    except (GameNotFound, DamagedRecord) as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    last = turns_before(record) + len(record["turns"]) - 1 if turns.last is None else turns.last
    for line in positions_of(record, turns.first, last):
        sys.stdout.buffer.write(orjson.dumps(line) + b"\n")
    return 0


def print_replay(
    database: str, game: str, turns: TurnRange | None, output: Path | None, said: RecordsNote
) -> int:
    try:
        record = load_game(database, game, said)
        played = turns_before(record) + len(record["turns"])
        if turns is not None and turns.first > played:
            print(
                f"tavern: --turns: game {record['id']} has {played} turns; there is no turn "
                f"{turns.first}",
                file=sys.stderr,
            )
            return 2
        if output is not None:
            with output.open("wb") as file:
                file.writelines(record_lines(record, replay_result_text(record)))
            print(f"tavern: game {record['id']} is in {output}")
            return 0
        blocks = list(replay_text(record, turns))  # replayed in full before anything is said
        print("\n".join(blocks))
    except GameNotFound as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    except DamagedRecord as error:
        print(f"tavern: {error}", file=sys.stderr)
        return 1
    return 0
