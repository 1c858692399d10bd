"""Every game as data (issue 34, item 3): ``GET /api/games`` asked for JSON lines streams the
finished games, oldest first, each the whole record the records give, with a cursor to go on
from; by bot and time, bounded by ``max``; ``tavern records export`` writes the same lines to a
zstandard-compressed file, or to a Parquet file that pyarrow and DuckDB read back as the records
(10,000 games, copied from real ones). Real games played over TCP, a real visor."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import Any

import aiohttp
import duckdb
import orjson
import pyarrow.parquet as pq
import pytest
import zstandard

from server.records import Archived, Records
from server.records.archive import archived
from server.records.identities import roster_kept
from server.records.parquet import ROW_GROUP_GAMES, record_of
from tests.archive_copies import copied
from tests.conftest import RawClient, serving_visor, test_config
from tests.test_command_line import tavern
from tests.test_identity import added
from visor import game_export


async def played(port: int, joins: tuple[dict[str, str], dict[str, str]]) -> None:
    """One short Thud game between these joins' players, the first legal move every turn."""
    first, second = await RawClient.connect(port), await RawClient.connect(port)
    await first.send({"type": "create-simulation", "game": "thud"})
    simulation = (await first.expect("ready"))["simulationId"]
    for client, join in zip((first, second), joins, strict=True):
        await client.send({"type": "join-simulation", "simulationId": simulation, **join})
        await client.expect("game-info")

    async def play(client: RawClient) -> None:
        while True:
            message = await client.receive()
            if message["type"] == "turn":
                move = message["state"]["moves"][0]
                await client.send({"type": "player-turn", "turn": message["turn"],
                                   "move": {"from": move["from"], "to": move["to"]}})  # fmt: skip
            elif message["type"] in ("win-game", "loss-game", "draw-game"):
                return

    await asyncio.gather(play(first), play(second))
    for client in (first, second):
        await client.close()


async def exported(session: aiohttp.ClientSession, url: str, **query: str) -> list[Any]:
    async with session.get(f"{url}/api/games", params={"format": "ndjson", **query}) as answer:
        assert answer.status == 200, await answer.text()
        assert answer.content_type == "application/x-ndjson"
        return [orjson.loads(line) for line in (await answer.read()).splitlines()]


async def test_the_archive_streams_whole_records_by_bot_and_time_paged_by_cursor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(game_export, "EXPORT_PAGE", 2)  # pages of two: read past a page's end
    database = tmp_path / "arena.db"
    key = added(str(database), "Grimli")
    config = test_config().with_turn_limit("thud", 6)
    async with (
        serving_visor(config, database) as served,
        roster_kept(served.records.roster_changes, served.records, served.arena.roster),
        aiohttp.ClientSession() as session,
    ):
        grimli = {"nick": "Grimli", "bot": "Grimli", "key": key}
        started = time.time()
        for joins in (
            (grimli, {"nick": "guest"}),
            ({"nick": "a"}, {"nick": "b"}),
            ({"nick": "c"}, grimli),
        ):
            await played(served.tcp_port, joins)
        await served.records.flush()
        everything = await exported(session, served.url)
        assert len(everything) == 3
        starts = [game["startedAt"] for game in everything]
        assert starts == sorted(starts)
        for line in everything:
            record = served.records.game(line["id"])
            assert record is not None and {**record, "cursor": line["cursor"]} == line
            assert len(line["turns"]) == 6 and line["seed"] is not None
        # Paged: two, then the rest from the second's cursor.
        first_two = await exported(session, served.url, max="2")
        assert [g["id"] for g in first_two] == [g["id"] for g in everything[:2]]
        rest = await exported(session, served.url, cursor=first_two[-1]["cursor"])
        assert [g["id"] for g in rest] == [everything[2]["id"]]
        # By bot (in any case), and by time.
        by_bot = await exported(session, served.url, bot="grimli")
        assert [g["id"] for g in by_bot] == [everything[0]["id"], everything[2]["id"]]
        assert await exported(session, served.url, since=str(time.time() + 60)) == []
        since, until = str(started - 1), "2999-01-01"
        assert len(await exported(session, served.url, since=since, until=until)) == 3
        for wrong in ({"max": "0"}, {"max": "many"}, {"since": "soon"}, {"cursor": "x"}):
            async with session.get(f"{served.url}/api/games",
                                   params={"format": "ndjson", **wrong}) as answer:  # fmt: skip
                assert answer.status == 400, wrong
        # The same records written to a file by the command line, zstandard-compressed.
        out = tmp_path / "grimli.jsonl.zst"
        export = ["records", "export", "--bot", "Grimli", "--output", str(out)]
        ran = await asyncio.to_thread(tavern, *export, "--database", str(database))
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == f"2 games written to {out}"
        with zstandard.ZstdDecompressor().stream_reader(out.open("rb")) as compressed:
            lines = [orjson.loads(line) for line in io.TextIOWrapper(compressed)]
        assert lines == by_bot
        # The page of summaries is unchanged when JSON lines are not asked for.
        async with session.get(f"{served.url}/api/games") as answer:
            assert (await answer.json())["total"] == 3


async def test_an_export_of_10_000_games_to_parquet_reads_back_as_the_records(
    tmp_path: Path,
) -> None:
    """Three real games, copied to 10,000 in the records; ``tavern records export --format
    parquet`` writes them a row group at a time; pyarrow reads back every record as the records
    give it, and DuckDB queries the file as it is (its nested players and turns, its JSON)."""
    database = tmp_path / "arena.db"
    config = test_config().with_turn_limit("thud", 6)
    async with serving_visor(config, database) as served:
        for joins in (({"nick": "a"}, {"nick": "b"}),) * 3:
            await played(served.tcp_port, joins)
        await served.records.flush()
    assert await asyncio.to_thread(copied, database, 10_000) == 10_000
    out = tmp_path / "archive.parquet"
    export = ["records", "export", "--format", "parquet", "--output", str(out)]
    ran = await asyncio.to_thread(tavern, *export, "--database", str(database))
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == f"10000 games written to {out}"

    read = pq.ParquetFile(out)
    assert read.metadata.num_rows == 10_000
    assert read.metadata.num_row_groups == 10_000 // ROW_GROUP_GAMES
    records = Records(str(database))
    records.open_to_read()
    rows = (record_of(row) for batch in read.iter_batches() for row in batch.to_pylist())
    expected = (
        {k: v for k, v in r.items() if k != "cursor"} for r in archived(records, Archived())
    )
    count = 0
    for row, record in zip(rows, expected, strict=True):
        assert row == record
        count += 1
    assert count == 10_000

    first = records.game(next(iter(archived(records, Archived())))["id"])
    assert first is not None
    query = f"""
        SELECT count(*), count(DISTINCT id), sum(turnCount), min(startedAt),
               count(*) FILTER (WHERE players[1].nick = 'a' AND len(turns) = 6)
        FROM read_parquet('{out}')
    """
    by_id = f"""
        SELECT turns[1].action::JSON->'move', result.winner, settings::JSON->>'turnLimit'
        FROM read_parquet('{out}') WHERE id = ?
    """
    with duckdb.connect() as db:
        counted = db.execute(query).fetchone()
        move = db.execute(by_id, [first["id"]]).fetchone()
    assert counted == (10_000, 10_000, 60_000, first["startedAt"], 10_000)
    assert move is not None
    assert orjson.loads(move[0]) == first["turns"][0]["action"]["move"]
    assert move[1:] == (first["result"]["winner"], "6")
