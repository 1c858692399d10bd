"""Hosted bots in a tournament (issue 33): each plays its active version (or the version
``NAME#N`` names), as the records keep it when the games start, unpacked once into this
machine's cache of versions (by hash: a version never changes) and run isolated
(``server.jail``) with its run command, in its folder.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shlex
from collections.abc import Sequence

from server.bot_versions import unpacked, versions_cache
from server.records import Records
from server.tournament.spec import Entrant, TournamentError


async def resolved(entrants: Sequence[Entrant], records: Records) -> dict[str, Entrant]:
    """Every entrant by name, a hosted one as its active version plays: its command and its
    folder. Raises ``TournamentError`` for a hosted bot without an active version."""
    found: dict[str, Entrant] = {}
    for entrant in entrants:
        if entrant.hosted is None:
            found[entrant.name] = entrant
            continue
        bot, _, number = entrant.hosted.partition("#")  # NAME, or NAME#N for a version of it
        if number.isdigit():
            version = await asyncio.to_thread(records.version_by_number, bot, int(number))
        else:
            version = await asyncio.to_thread(records.active_version, bot)
        if version is None:
            what = f"no version {number}" if number else "no active version"
            raise TournamentError(
                f"bot {entrant.name!r}: {bot} has {what} to play (tavern bots upload)"
            )
        content_hash, run = version
        folder = versions_cache() / content_hash
        if not folder.is_dir():
            stored = await asyncio.to_thread(records.version_archive, content_hash)
            if stored is None:  # retired and gone meanwhile: the next run takes the new one
                raise TournamentError(f"bot {entrant.name!r}: its version {content_hash} is gone")
            folder = await asyncio.to_thread(unpacked, stored[0], content_hash, versions_cache())
        found[entrant.name] = dataclasses.replace(
            entrant, command=tuple(shlex.split(run)), cwd=folder
        )
    return found
