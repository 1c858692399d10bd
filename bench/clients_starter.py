"""How the /clients page's starter client plays against the house players.

    python bench/clients_starter.py [--games 10] [--first-seed 11] [--file CLIENT.js]

Each game is the starter (the ``STARTER`` template of server/games/thud/web/clients-store.js,
or ``--file``) run by the challenge adapter (``node server/games/thud/web/thud-client.js``)
against one house player (``python -m bots.house_bot``, house seeds ``--first-seed`` onwards),
over TCP against ``tavern serve`` in its own process: as the dwarfs against the house troll and
the house random player, as the trolls against the house dwarf and the house random player.
Every game's score (dwarfs-trolls) and end are printed, then one line per pairing with wins,
draws, losses, and the server's CPU per turn.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import orjson

# Run as a script, so the repository root is not on the path by itself.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, ServerProcess, arena_process

STORE = ROOT / "visor" / "static" / "js" / "clients-store.js"
ADAPTER = ROOT / "server" / "games" / "thud" / "web" / "thud-client.js"
GAME_TIMEOUT_S = 300
PAIRINGS = (("dwarf", "troll"), ("dwarf", "random"), ("troll", "dwarf"), ("troll", "random"))
RESULT = re.compile(r"^(win|loss|draw)-game: (.*) (\{.*\})$", re.MULTILINE)


def starter_source() -> str:
    """The template as the page offers it (a JavaScript template literal, unescaped)."""
    text = STORE.read_text()
    found = re.search(r"export const STARTER = `(.*?)`;\n", text, re.DOTALL)
    if not found:
        raise RuntimeError(f"no STARTER template in {STORE}")
    return found.group(1).replace("\\`", "`").replace("\\$", "$")


async def one_game(
    server: ServerProcess, client: Path, side: str, house: str, seed: int
) -> tuple[str, str, dict[str, int]]:
    """The client's result, the end's reason and the score, as the adapter printed them."""
    port = str(server.tcp_port)
    other = "troll" if side == "dwarf" else "dwarf"
    house_bot = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "bots.house_bot", "thud", house, "--side", other),
        *("--port", port, "--seed", str(seed)),
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    adapter = await asyncio.create_subprocess_exec(
        *("node", str(ADAPTER), "--side", side, "--file", str(client), "--port", port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(GAME_TIMEOUT_S):
            out, err = await adapter.communicate()
            await house_bot.wait()
    finally:
        for process in (adapter, house_bot):
            if process.returncode is None:
                process.kill()
                await process.wait()
    found = RESULT.search(out.decode())
    if not found:
        raise RuntimeError(f"no result from the adapter: {out.decode()!r} {err.decode()!r}")
    return found.group(1), found.group(2), orjson.loads(found.group(3))


def turns_recorded(server: ServerProcess) -> int:
    """Turns of every Thud game the arena has recorded so far (from its HTTP API)."""
    url = f"http://127.0.0.1:{server.http_port}/api/games?game=thud&perPage=200"
    with urllib.request.urlopen(url, timeout=10) as response:
        games = orjson.loads(response.read())["games"]
    return sum(int(game["turnCount"]) for game in games)


async def run(client: Path, pairings: list[tuple[str, str]], games: int, first_seed: int) -> None:
    async with arena_process("asyncio", {"turnTimeoutMs": 60_000}) as server:
        for side, house in pairings:
            tally = {"win": 0, "draw": 0, "loss": 0}
            scores = []
            cpu_before, started = server.cpu_seconds(), time.monotonic()
            turns_before = await asyncio.to_thread(turns_recorded, server)
            for seed in range(first_seed, first_seed + games):
                result, reason, score = await one_game(server, client, side, house, seed)
                tally[result] += 1
                scores.append(f"{score['dwarfs']}-{score['trolls']}")
                print(f"  {side} vs house {house}, seed {seed}: {result} {scores[-1]} ({reason})")
            turns = await asyncio.to_thread(turns_recorded, server) - turns_before
            print(
                f"{side} vs house {house}: {tally['win']} won, {tally['draw']} drawn, "
                f"{tally['loss']} lost; scores (dwarfs-trolls) {', '.join(scores)}; "
                f"{time.monotonic() - started:.0f} s, "
                f"{turns} turns, server CPU per turn "
                f"{(server.cpu_seconds() - cpu_before) / max(turns, 1) * 1000:.2f} ms",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=11)
    parser.add_argument("--file", type=Path, help="a client file instead of the starter")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=[f"{side}-{house}" for side, house in PAIRINGS],
        help="these pairings only (the starter's side, then the house player)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="starter-") as scratch:
        client = args.file
        if client is None:
            client = Path(scratch) / "starter.js"
            client.write_text(starter_source())
        pairings = [(s, h) for s, h in PAIRINGS if not args.only or f"{s}-{h}" in args.only]
        asyncio.run(run(client.resolve(), pairings, args.games, args.first_seed))


if __name__ == "__main__":
    main()
