"""One transaction of the records' writes, and what came of it: committed, the database out of
reach (the writes then wait in the journal), or refused (a write that can never be taken)."""

from __future__ import annotations

import contextlib
import logging

from server.records.backends import Backend, Connection
from server.records.writes import Batch

log = logging.getLogger(__name__)

COMMITTED, AWAY, REFUSED = "committed", "away", "refused"


def transaction(backend: Backend, connection: Connection, operations: Batch) -> str:
    """Run writes in one transaction: ``COMMITTED``, or nothing written and ``AWAY`` (the
    database is out of reach: the caller says so, once an outage) or ``REFUSED`` (a write the
    database, or this code, cannot take: a bug, shown with its traceback)."""
    try:
        connection.execute("BEGIN")
        for operation in operations:
            operation(backend, connection)
        connection.execute("COMMIT")
    except backend.errors as error:
        away = backend.unavailable(error, connection)
        if not away:
            log.exception("records: a transaction of %d writes failed", len(operations))
        with contextlib.suppress(*backend.errors):
            connection.execute("ROLLBACK")
        return AWAY if away else REFUSED
    except (KeyError, TypeError, ValueError):  # a journalled write of another version's
        log.exception("records: a transaction of %d writes failed", len(operations))
        with contextlib.suppress(*backend.errors):
            connection.execute("ROLLBACK")
        return REFUSED
    return COMMITTED
