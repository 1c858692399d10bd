"""Where a long command's log goes: a file beside the records, so that the arena's log never
breaks into the command's progress line."""

from __future__ import annotations

import logging
from pathlib import Path

from server.config import ArenaConfig
from server.records import is_postgres

LOG_FORMAT = "%(asctime)s %(name)s %(message)s"


def log_to(log_file: Path) -> None:
    """Send the log to a file instead of stderr."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(filename=log_file, level=logging.INFO, format=LOG_FORMAT, force=True)


def log_beside_records(config: ArenaConfig, name: str) -> Path:
    """An SQLite file's folder, else ``data/`` (the default records' folder)."""
    folder = Path("data") if is_postgres(config.database) else Path(config.database).parent
    return folder / f"{name}.log"
