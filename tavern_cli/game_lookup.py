"""A recorded game by what a command line names: a game file, else a game id in the records
(``tavern replay GAME``, ``tavern play --from GAME``)."""

from __future__ import annotations

from pathlib import Path

from server.game_file import read_game_file
from server.games.base import JsonObject
from server.records import Records, is_postgres
from tavern_cli.config_file import RecordsNote


class GameNotFound(Exception):
    """No game by that id in the records, and no such game file."""


def load_game(database: str, game: str, said: RecordsNote) -> JsonObject:
    """The record of a game: a game file's (a path to a file), else the records' game of that
    id (``said`` is called before they are opened); raises ``GameNotFound`` or
    ``DamagedRecord`` with what to say."""
    path = Path(game)
    if path.is_file():
        try:
            with path.open("rb") as lines:
                return read_game_file(lines, str(path))
        except OSError as error:
            raise GameNotFound(f"{path} cannot be read: {error}") from error
    if game.endswith(".jsonl"):
        raise GameNotFound(f"there is no file {game}")
    said()
    if not is_postgres(database) and not Path(database).exists():
        raise GameNotFound(f"no records file at {database}")
    records = Records(database)
    records.open_to_read()
    record = records.game(game)
    if record is None:
        raise GameNotFound(f"no recorded game {game!r} in {database}")
    return record
