"""Thud challenge clients in the arena: the JS controller, the Node adapter, tournaments of files.

The controller (server/games/thud/web/thud-controller.js) is checked against the rules module
at every ply of the sample traces; the adapter (server/games/thud/web/thud-client.js) plays the
sample clients in tests/js_clients through a real arena; a folder of them is a tournament.
These tests need Node.js and fail without it.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from bots.house import play_house
from server.games.thud import rules
from server.games.thud.board import SQUARES, Square
from server.games.thud.codec import bot_state, position_to_wire
from server.games.thud.danger import danger_squares
from server.games.thud.ends import ThudEnd
from server.games.thud.game import THUD
from server.games.thud.movegen import legal_moves, moves_from
from server.games.thud.pieces import (
    DWARF,
    SIDES,
    TROLL,
    Action,
    Move,
    State,
    indexed_dwarfs,
    indexed_trolls,
    initial_state,
    score,
    side_to_move,
)
from server.match import Match
from server.match_options import MatchOptions
from server.match_views import TurnResult
from server.records import GameFilter, Records
from server.tournament.schedule import schedule
from server.tournament.spec import TournamentError, load_spec, spec_from_mapping
from tests.conftest import Running, TurnLog, tap

ROOT = Path(__file__).resolve().parent.parent
CONTROLLER = ROOT / "server" / "games" / "thud" / "web" / "thud-controller.js"
ADAPTER = ROOT / "server" / "games" / "thud" / "web" / "thud-client.js"
CLIENTS = Path(__file__).parent / "js_clients"
TRACES = Path(__file__).parent / "data" / "thud_traces.jsonl.gz"
NODE_TIMEOUT_S = 60.0
GAME_TIMEOUT_S = 60.0

JsonObject = dict[str, Any]


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    assert path is not None, "these tests need Node.js: `make test` installs it"
    return path


def run_node(node: str, script: str, stdin: str = "") -> str:
    done = subprocess.run(
        [node, "-e", script, str(CONTROLLER)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- the controller against the rules module ---------------------------------------------------
# The probe plays every recorded game through two seats whose client reports what the controller
# says, then plays the recorded move with select_space/move; end_turn reports the board after it.
PROBE = r"""
const T = require(process.argv[1]);
const compact = (moves) => moves.map((m) => [m.x, m.y, m.type, m.kills, m.in_danger]);
const info = (c, x, y) => {
  const i = c.space_info(x, y);
  return [i.x, i.y, i.piece, compact(i.moves), compact(i.safe_moves), i.in_danger,
          i.nearest_dwarf, i.nearest_troll];
};
const board = (c) => ({
  turn: c.turn(), scores: c.scores(), dwarfs: c.dwarfs(), trolls: c.trolls(),
  indexed_dwarfs: c.indexed_dwarfs(), indexed_trolls: c.indexed_trolls(),
  previous_move: c.previous_move(),
});
const warnings = [];
let current = null;
class Probe {
  constructor(controller) { this.c = controller; }
  turn() {
    const c = this.c;
    const record = board(c);
    record.pieces = c.pieces();
    record.killing_moves = c.killing_moves();
    record.own = c.pieces().map((p) => info(c, p.x, p.y));
    if (current.full) record.all = c.spaces().map((s) => info(c, s.x, s.y));
    const [fx, fy, tx, ty] = current.play;
    record.selected = c.select_space(fx, fy);
    record.moved = c.move(tx, ty);
    record.turn_after_move = c.turn();
    record.end_turn = this.after;
    current.record = record;
  }
  end_turn() { this.after = board(this.c); }
}
for (const line of require('fs').readFileSync(0, 'utf8').split('\n')) {
  if (!line) continue;
  const game = JSON.parse(line);
  const warn = (text) => warnings.push(text);
  const seats = {
    dwarf: T.createSeat(Probe, 'dwarf', { warn }),
    troll: T.createSeat(Probe, 'troll', { warn }),
  };
  game.turns.forEach((state, i) => {
    current = { play: game.plays[i], full: game.full.includes(i) };
    const reply = seats[state.side].play(state);
    current.record.reply = reply;
    process.stdout.write(JSON.stringify(current.record) + '\n');
  });
}
if (warnings.length) { console.error(warnings.join('\n')); process.exit(1); }
"""


def _xy(square: Square) -> JsonObject:
    return {"x": square[0], "y": square[1]}


def _nearest(pieces: frozenset[Square], x: int, y: int) -> JsonObject:
    """RULES.md's rings: top row right to left, the middle rows' ends, bottom row right to left."""
    for d in range(1, 16):
        ring = [(cx, y - d) for cx in range(x + d, x - d - 1, -1)]
        for cy in range(y - d + 1, y + d):
            ring += [(x - d, cy), (x + d, cy)]
        ring += [(cx, y + d) for cx in range(x + d, x - d - 1, -1)]
        found = [_xy(s) for s in ring if s in pieces]  # pieces stand on squares only
        if found:
            return {"distance": d, "pieces": found}
    return {"distance": 15, "pieces": []}


class Expected:
    """What the controller must answer in a position, from the rules module."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.dwarfs = frozenset(state.dwarfs)
        self.trolls = frozenset(state.trolls)
        self.danger = {side: danger_squares(state, side) for side in (DWARF, TROLL)}

    def info(self, square: Square, asking: str) -> list[Any]:
        mover = DWARF if square in self.dwarfs else TROLL if square in self.trolls else None
        danger = self.danger[mover] if mover else frozenset()  # a move is judged for its mover
        moves = [
            [m.end[0], m.end[1], m.kind, len(m.killed), m.end in danger]
            for m in moves_from(self.state, square)
        ]
        return [
            square[0],
            square[1],
            None if mover is None else mover[0],
            moves,
            [m for m in moves if not m[4]],
            square in self.danger[asking],
            _nearest(self.dwarfs, *square),
            _nearest(self.trolls, *square),
        ]


def _scores(state: State) -> JsonObject:
    standing = score(state)
    winning = {None: "?", DWARF: "d", TROLL: "t"}[standing.winning]
    return {
        "dwarfs": standing.dwarfs,
        "trolls": standing.trolls,
        "difference": standing.difference,
        "winning": winning,
    }


def _board(state: State, ply: int, previous: JsonObject) -> JsonObject:
    return {
        "turn": ply,
        "scores": _scores(state),
        "dwarfs": [_xy(s) for s in state.dwarfs],
        "trolls": [_xy(s) for s in state.trolls],
        "indexed_dwarfs": [None if s is None else _xy(s) for s in indexed_dwarfs(state)],
        "indexed_trolls": [None if s is None else _xy(s) for s in indexed_trolls(state)],
        "previous_move": previous,
    }


def _previous(move: Move | None, side: str) -> JsonObject:
    if move is None:
        start = {"x": 0, "y": 0}
        return {"side": "?", "from": start, "to": start, "type": "game_start", "killed": 0}
    return {
        "from": _xy(move.start),
        "to": _xy(move.end),
        "side": side[0],
        "type": move.kind,
        "killed": len(move.killed),
    }


def _trace_games() -> dict[int, list[JsonObject]]:
    games: dict[int, list[JsonObject]] = {}
    with gzip.open(TRACES, "rt", encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            if record["t"] == "pos":
                games.setdefault(record["g"], []).append(record)
    return games


def test_the_controller_answers_as_the_rules_at_every_ply_of_the_traces(node: str) -> None:
    feed: list[str] = []
    expected: list[tuple[State, State, list[int], bool]] = []
    for number, (game, positions) in enumerate(sorted(_trace_games().items())):
        state = initial_state()
        turns: list[JsonObject] = []
        full: list[int] = []
        for index, record in enumerate(positions):
            # The controller checks the arena's move list when it is there: every 10th ply.
            wire = position_to_wire(state) if index % 10 else bot_state(state)
            if number % 2:  # half the games send the slots, the others let the seats follow them
                wire["dwarfSlots"] = list(state.dwarf_slots)
                wire["trollSlots"] = list(state.troll_slots)
            if index % 15 == 7:
                full.append(index)
            turns.append(wire)
            fx, fy, tx, ty = record["play"]
            after, _ = rules.apply(state, rules.check(state, Action(((fx, fy), (tx, ty)))))
            expected.append((state, after, record["play"], index in full))
            state = after
        plays = [record["play"] for record in positions]
        feed.append(
            orjson.dumps({"game": game, "turns": turns, "plays": plays, "full": full}).decode()
        )
    output = run_node(node, PROBE, "\n".join(feed) + "\n").splitlines()
    assert len(output) == len(expected) > 1900

    for line, (state, after, play, everywhere) in zip(output, expected, strict=True):
        answer = json.loads(line)
        side = side_to_move(state)
        where = f"ply {state.ply} of a game at {state.dwarfs[:2]}"
        ours = Expected(state)
        previous = _previous(state.previous_move, TROLL if side == DWARF else DWARF)
        for key, value in _board(state, state.ply, previous).items():
            assert answer[key] == value, f"{key}, {where}"
        own = state.dwarfs if side == DWARF else state.trolls
        assert answer["pieces"] == [_xy(s) for s in own], where
        assert answer["killing_moves"] == [
            {"from": _xy(m.start), "to": _xy(m.end), "kills": len(m.killed)}
            for m in legal_moves(state)
            if m.killed
        ], where
        assert answer["own"] == [ours.info(s, side) for s in own], where
        if everywhere:
            assert answer["all"] == [ours.info(s, side) for s in SQUARES], where
        assert (answer["selected"], answer["moved"], answer["turn_after_move"]) == (
            True,
            True,
            None,
        )
        assert answer["end_turn"] == _board(after, state.ply, _previous(after.previous_move, side))
        assert answer["reply"] == {"move": {"from": play[:2], "to": play[2:]}}


# --- the controller's members, one by one ------------------------------------------------------
QUIRKS = r"""
const T = require(process.argv[1]);
const r = {};
const warnings = [];
const list = [
  { x: 0, y: 0, n: 'a' }, { x: 2, y: 0, n: 'b' }, { x: 0, y: 2, n: 'c' }, { x: 1, y: 0, n: 'd' },
];
r.distance = T.utils.distance_between({ x: 1, y: 1 }, { x: 4, y: 3 });
r.closest = T.utils.closest_to(list, { x: 0, y: 0 }).n;
r.sorted = list.map((e) => [e.n, e.distance]);
r.farthest = T.utils.farthest_from(list, { x: 0, y: 0 }).n;

let script = null;
class Scripted {
  constructor(c, utils) {
    this.c = c;
    this.seen = {
      turn: c.turn(), utils: Object.keys(utils), copy: utils !== T.utils, dwarfs: c.dwarfs().length,
    };
  }
  turn() { script.turn(this.c); }
  end_turn() { if (script.end_turn) script.end_turn(this.c); }
}
const seat = T.createSeat(Scripted, 'dwarf', { warn: (text) => warnings.push(text) });
const c = seat.controller;
r.constructed = seat.client.seen;
r.client_controller = seat.client.controller === c;
r.initial = { side: c.side, current: c.current_space, checked: c.checked_space === undefined,
  declared: 'declared' in c, previous: c.previous_move(), select: c.select_space(5, 0),
  opponent: c.opponent_declared() === undefined };

let position = T.rules.initialPosition();
const wire = () => {  // as the arena sends it today, without the slots: the seat follows them
  const w = T.rules.toWire(position);
  delete w.dwarfSlots;
  delete w.trollSlots;
  return w;
};
const trollMoves = (declare) => {
  const first = T.rules.legalMoves(position)[0];
  position = T.rules.play(position, first.from, first.to, declare);
};

script = {
  turn(c) {
    r.turn = c.turn();
    r.spaces = [c.spaces().length, c.spaces()[0], c.spaces()[163]];
    r.scores = c.scores();
    r.live = c.previous_move() === c.previous_move();
    r.info_missing = [c.space_info(7, 7), c.space_info(20, 3), c.space_info(0, 0)];
    r.info_strings = [c.space_info('5', '0').x, c.space_info('05', '0')];
    try {
      c.check_space(0, 0);
      r.check_missing = 'no error';
    } catch (e) {
      r.check_missing = e.name;
    }
    r.select_missing = c.select_space(0, 0) === undefined;
    r.check_troll = c.check_space(6, 6);
    r.checked_troll = c.checked_space;
    r.select_troll = c.select_space(6, 6);
    r.after_select_troll = [c.current_space, c.checked_space];
    r.check_move_unselected = c.check_move(5, 1) === undefined;
    r.select = c.select_space(5, 0);
    r.current = c.current_space;
    r.check_move_walk = c.check_move(5, 1);
    r.check_move_bad = c.check_move(9, 9);
    r.check_move_missing = c.check_move(0, 0) === undefined;
    r.bad_move = c.move(9, 9);
    r.after_bad = [c.current_space, c.checked_space];
    try { c.move(5, 1); r.second_move = 'no error'; } catch (e) { r.second_move = e.name; }
    // The engine's teleport: select A, check B, move where only B goes. The arena refuses it.
    c.select_space(5, 0);
    const fromA = c.space_info(5, 0).moves;
    c.check_space(6, 0);
    const onlyB = c.checked_space.moves.find((m) => !fromA.some((n) => n.x === m.x && n.y === m.y));
    r.teleport = c.move(onlyB.x, onlyB.y);
    r.teleport_warned = warnings.length;
    c.check_space(5, 0);
    try { c.move(5, 1); r.move_unselected = 'no error'; } catch (e) { r.move_unselected = e.name; }
    c.select_space(5, 0);
    r.moved = c.move('5', '1');
    r.after_move = [c.turn(), c.select_space(6, 0), c.check_space(6, 0), c.move(6, 1)];
    r.previous_after = c.previous_move();
  },
  end_turn(c) {
    r.end_turn = {
      turn: c.turn(), first: c.dwarfs()[0], scores: c.scores(), current: c.current_space,
    };
    c.declare(true);
  },
};
r.reply1 = seat.play(wire());
position = T.rules.play(position, [5, 0], [5, 1], true);
trollMoves(undefined);

script = {
  turn(c) {
    r.second = {
      turn: c.turn(), declared: c.declared, opponent: c.opponent_declared() === undefined,
      previous: c.previous_move(),
    };
    c.select_space(6, 0);
    c.move(6, 1);
  },
  end_turn(c) { c.declare(false); },
};
r.reply2 = seat.play(wire());
position = T.rules.play(position, [6, 0], [6, 1], false);
trollMoves(true);

script = {
  turn(c) {
    r.third_opponent = c.opponent_declared();
    c.check_space(8, 0);
    c.select_space(8, 0);
  },
};
r.idle = seat.play(wire());
script = { turn(c) { throw new RangeError('on purpose'); } };
try {
  seat.play(wire());
  r.thrown = 'no error';
} catch (e) {
  r.thrown = e.name + ': ' + e.message;
}
script = {
  turn(c) {
    c.select_space(8, 0);
    try { c.move(8, 1); } catch (e) { r.caught = e.message; }
  },
  end_turn(c) { throw new Error('from end_turn'); },
};
try {
  seat.play(wire());
  r.end_turn_thrown = 'no error';
} catch (e) {
  r.end_turn_thrown = e.message;
}
r.indexed = [c.indexed_dwarfs().length, c.indexed_trolls().length, c.indexed_dwarves()[0]];
r.aliases = [c.dwarves().length, c.pieces().length];
r.forbidden = T.forbiddenTerms('class { turn() { Math.random(); game.x; } }');
r.warnings = warnings;
process.stdout.write(JSON.stringify(r));
"""


def test_every_member_answers_with_the_challenge_s_shapes_and_quirks(node: str) -> None:
    r = json.loads(run_node(node, QUIRKS))
    # utils: Manhattan; closest_to/farthest_from write .distance and sort in place, stably
    assert r["distance"] == 5
    assert (r["closest"], r["farthest"]) == ("a", "b")
    assert r["sorted"] == [["a", 0], ["d", 1], ["b", 2], ["c", 2]]  # sorted in place, stably
    # construction: as the engine did it, before the first turn (wrapped members answer null)
    assert r["constructed"] == {
        "turn": None,
        "utils": ["distance_between", "farthest_from", "closest_to"],
        "copy": True,
        "dwarfs": 32,
    }
    assert r["client_controller"] is True
    start = {"x": 0, "y": 0}
    assert r["initial"] == {
        "side": "d",
        "current": None,
        "checked": True,
        "declared": False,
        "previous": {"side": "?", "from": start, "to": start, "type": "game_start", "killed": 0},
        "select": None,
        "opponent": True,
    }
    # reading the board
    assert r["turn"] == 1
    assert r["spaces"] == [164, {"x": 5, "y": 0, "piece": "d"}, {"x": 9, "y": 14, "piece": "d"}]
    assert r["scores"] == {"dwarfs": 32, "trolls": 32, "difference": 0, "winning": "?"}
    assert r["live"] is True
    assert r["info_missing"] == [None, None, None]
    assert r["info_strings"] == [5, None]
    # selecting, checking, moving
    assert r["check_missing"] == "TypeError"
    assert r["select_missing"] is True
    assert r["check_troll"] is None
    assert r["checked_troll"] == {"x": 6, "y": 6, "moves": [], "in_danger": True}
    assert r["select_troll"] is False
    assert r["after_select_troll"] == [None, None]
    assert r["check_move_unselected"] is True
    assert r["select"] is True
    assert r["current"] == {"x": 5, "y": 0, "piece": "d"}
    assert r["check_move_walk"] == {"valid": True, "type": "walk", "kills": 0, "targets": []}
    assert r["check_move_bad"] == {"valid": False, "type": None, "kills": 0, "targets": []}
    assert r["check_move_missing"] is True
    assert r["bad_move"] is False
    assert r["after_bad"] == [None, None]
    assert r["second_move"] == "TypeError"
    assert r["teleport"] is False
    assert r["teleport_warned"] == 1
    assert r["move_unselected"] == "TypeError"
    assert r["moved"] is True
    assert r["after_move"] == [None, None, None, None]  # the turn is over
    assert r["previous_after"] == {
        "from": {"x": 5, "y": 0},
        "to": {"x": 5, "y": 1},
        "side": "d",
        "type": "walk",
        "killed": 0,
    }
    # end_turn runs inside move(), on the board after it, still on the mover's ply
    assert r["end_turn"] == {
        "turn": 1,
        "first": {"x": 5, "y": 1},
        "scores": {"dwarfs": 32, "trolls": 32, "difference": 0, "winning": "?"},
        "current": None,
    }
    # the declare made in end_turn goes with the move; a flag the arena already has does not
    assert r["reply1"] == {"move": {"from": [5, 0], "to": [5, 1]}, "declare": True}
    assert r["second"]["turn"] == 3
    assert r["second"]["declared"] is True
    assert r["second"]["opponent"] is True  # undefined: the trolls never declared
    assert r["third_opponent"] is True
    assert r["second"]["previous"]["side"] == "t"
    assert r["reply2"] == {"move": {"from": [6, 0], "to": [6, 1]}, "declare": False}
    # no move, an exception, an exception from end_turn that the client caught
    assert r["idle"] is None
    assert r["thrown"] == "RangeError: on purpose"
    assert r["caught"] == "from end_turn"
    assert r["end_turn_thrown"] == "from end_turn"
    assert r["indexed"] == [32, 8, {"x": 5, "y": 1}]
    assert r["aliases"] == [32, 32]
    assert r["forbidden"] == ["game.", "Math.random"]
    assert len(r["warnings"]) == 1
    assert "cannot go there" in r["warnings"][0]


# --- games through the arena -------------------------------------------------------------------
@dataclass
class ClientRun:
    returncode: int
    stdout: str
    stderr: str


@dataclass
class GameRun:
    simulation: Match
    clients: dict[str, ClientRun]  # by side, for the JS seats
    turns: list[TurnResult]


async def play(
    arena: Running,
    dwarf: str | Path,
    troll: str | Path,
    seed: int = 1,
    *options: str,
    via: int | None = None,
) -> GameRun:
    """One game; a seat is a client file (played by the adapter, with ``options``, connecting
    to the port ``via`` if given, else the arena's) or "house NAME"."""
    assert arena.tcp_port is not None
    simulation = arena.arena.open("thud", MatchOptions(seed=seed))
    log = TurnLog(arena)
    processes: dict[str, asyncio.subprocess.Process] = {}
    houses: list[asyncio.Task[JsonObject]] = []
    try:
        for side, seat in ((DWARF, dwarf), (TROLL, troll)):
            if isinstance(seat, str):
                player = THUD.house_players[seat.removeprefix("house ")]
                houses.append(
                    asyncio.create_task(
                        play_house(
                            THUD.name,
                            player,
                            "127.0.0.1",
                            arena.tcp_port,
                            simulation.id,
                            seed,
                            side,
                        )
                    )
                )
                continue
            processes[side] = await asyncio.create_subprocess_exec(
                *(shutil.which("node") or "node", str(ADAPTER), "--side", side),
                *("--file", str(seat), "--port", str(via or arena.tcp_port)),
                *("--simulation", simulation.id, *options),
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        async with asyncio.timeout(GAME_TIMEOUT_S):
            await simulation.done.wait()
            clients = {}
            for side, process in processes.items():
                out, err = await process.communicate()
                assert process.returncode is not None
                clients[side] = ClientRun(process.returncode, out.decode(), err.decode())
            for house in houses:
                await house
    finally:
        for process in processes.values():
            if process.returncode is None:
                process.kill()
                await process.wait()
        for house in houses:
            house.cancel()
    arena.listeners.remove(log)
    return GameRun(simulation, clients, log.turns[simulation.id])


def client(name: str) -> Path:
    return CLIENTS / f"{name}.js"


def replay(run: GameRun) -> Iterator[tuple[State, JsonObject]]:
    """Each turn played with the position it was played in."""
    state = initial_state()
    for turn in run.turns:
        yield state, turn.action
        (fx, fy), (tx, ty) = turn.action["move"]["from"], turn.action["move"]["to"]
        proposed = Action(((fx, fy), (tx, ty)), turn.action.get("declare"))
        state, _ = rules.apply(state, rules.check(state, proposed))


async def test_the_killer_plays_the_first_killing_move_the_rules_give(
    node: str, arena: Running
) -> None:
    run = await play(arena, client("killer"), "house troll")
    outcome = run.simulation.outcome
    assert outcome is not None
    assert outcome.reason in tuple(ThudEnd)
    assert run.clients[DWARF].returncode == 0
    assert run.clients[DWARF].stderr == ""  # no warning: the arena's moves matched, slots followed
    played = 0
    for state, action in replay(run):
        if side_to_move(state) == DWARF:
            moves = legal_moves(state)
            chosen = next((m for m in moves if m.killed), moves[0])
            assert action == {"move": {"from": list(chosen.start), "to": list(chosen.end)}}
            played += 1
    assert played > 10


async def test_a_declare_made_in_end_turn_counts_on_that_ply(node: str, arena: Running) -> None:
    run = await play(arena, client("peacemaker"), client("peacemaker"))
    assert run.simulation.outcome is not None
    assert run.simulation.outcome.reason == "Players agreed to finish"
    assert run.simulation.outcome.winner is None
    assert [turn.action.get("declare") for turn in run.turns] == [True, True]
    assert "ply 1 opponent_declared undefined" in run.clients[DWARF].stderr
    assert "ply 2 opponent_declared true" in run.clients[TROLL].stderr
    assert "draw-game: Players agreed to finish" in run.clients[DWARF].stdout


async def test_client_files_load_with_or_without_module_exports_and_without_require(
    node: str, arena: Running, tmp_path: Path
) -> None:
    source = client("peacemaker").read_text()
    declared = tmp_path / "declared.js"  # a class declaration, no export
    declared.write_text(
        source.replace("module.exports = class {", "class Peacemaker {")
        .rstrip()
        .removesuffix(";")
        .replace(
            "this.utils = utils;",
            "console.log('globals', typeof require, typeof process, typeof setTimeout);",
        )
    )
    bare = tmp_path / "bare.js"  # an anonymous class expression with a trailing semicolon
    bare.write_text(source.replace("module.exports = class {", "class {"))
    needs_require = tmp_path / "needs_require.js"
    needs_require.write_text(source.replace("this.utils = utils;", "this.fs = require('fs');"))
    endless = tmp_path / "endless.js"
    endless.write_text(source.replace("turn() {", "turn() {\n    while (true) {}"))
    runs = await asyncio.gather(
        play(arena, declared, client("peacemaker")),
        play(arena, client("peacemaker"), bare),
        play(arena, needs_require, client("peacemaker")),
        play(arena, endless, client("peacemaker"), 1, "--think-ms", "300"),
    )
    for run in runs[:2]:
        assert run.simulation.outcome is not None
        assert run.simulation.outcome.reason == "Players agreed to finish"
    assert "globals undefined undefined undefined" in runs[0].clients[DWARF].stderr
    for run, loser, status, text in (
        (runs[2], DWARF, 1, "ReferenceError: require is not defined"),
        (runs[3], DWARF, 1, "Script execution timed out after 300ms"),
    ):
        outcome = run.simulation.outcome
        assert outcome is not None
        assert outcome.reason == "Player disconnected"
        assert outcome.winner == SIDES.index(DWARF if loser == TROLL else TROLL)
        assert run.clients[loser].returncode == status
        assert text in run.clients[loser].stderr


def test_a_file_that_does_not_load_is_said_in_one_line_and_joins_nothing(
    node: str, tmp_path: Path
) -> None:
    """Before it connects: a missing file must not leave a simulation waiting for its player."""
    broken = tmp_path / "broken.js"
    broken.write_text("module.exports = class {\n  turn( {}\n};\n")
    throws = tmp_path / "throws.js"
    throws.write_text("const speed = warp * 2;\nmodule.exports = class {};\n")
    empty = tmp_path / "empty.js"
    empty.write_text("var answer = 42;\n")
    with socket.create_server(("127.0.0.1", 0)) as arena:  # where it would join
        port = str(arena.getsockname()[1])
        for file, line in (
            (tmp_path / "mine.js", f"mine: cannot load {tmp_path / 'mine.js'}: no such file"),
            (
                broken,
                f"broken: cannot load {broken}: SyntaxError: Unexpected token '}}' ({broken}:3)",
            ),
            (
                throws,
                f"throws: cannot load {throws}: ReferenceError: warp is not defined ({throws}:1)",
            ),
            (
                empty,
                f"empty: cannot load {empty}: it holds no class: write `module.exports = class "
                "{ ... }` or just the class",
            ),
        ):
            done = subprocess.run(
                [node, str(ADAPTER), "--side", "dwarf", "--file", str(file), "--port", port],
                capture_output=True,
                text=True,
                timeout=NODE_TIMEOUT_S,
                check=False,
            )
            assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")
        arena.setblocking(False)
        with pytest.raises(BlockingIOError):
            arena.accept()  # nobody connected


async def test_a_client_that_throws_or_never_moves_loses_only_its_own_game(
    node: str, arena: Running
) -> None:
    thrower, idle, normal = await asyncio.gather(
        play(arena, client("thrower"), client("killer")),
        play(arena, client("killer"), client("idle")),
        play(arena, client("cautious"), client("killer")),
    )
    # The thrower played two moves (plies 1 and 3), threw on ply 5 and left: a loss.
    outcome = thrower.simulation.outcome
    assert outcome is not None
    assert (outcome.reason, outcome.winner) == ("Player disconnected", 1)
    assert len(thrower.turns) == 4
    run = thrower.clients[DWARF]
    assert run.returncode == 1
    assert "ply 5: the client threw" in run.stderr
    assert "Error: thrower gives up on its third turn" in run.stderr
    assert "thrower.js:" in run.stderr  # the stack trace, into the client's file
    assert "win-game: Player disconnected" in thrower.clients[TROLL].stdout
    # The idle troll made no move on ply 2: as the challenge's engine did, the game stops there
    # and is scored as it stands, 32 v 32, a draw.
    outcome = idle.simulation.outcome
    assert outcome is not None
    assert (outcome.reason, outcome.winner) == ("No move", None)
    assert len(idle.turns) == 2  # the dwarfs' move, then the trolls' stop
    assert idle.clients[TROLL].returncode == 0
    assert "ply 2: the client made no move" in idle.clients[TROLL].stderr
    assert "dwarfs 32, trolls 32" in idle.clients[TROLL].stderr
    # The game played alongside them went on to a real end.
    outcome = normal.simulation.outcome
    assert outcome is not None
    assert outcome.reason in tuple(ThudEnd)
    assert [run.returncode for run in normal.clients.values()] == [0, 0]
    assert all(run.stderr == "" for run in normal.clients.values())


async def test_every_reply_names_the_ply_it_answers(node: str, arena: Running) -> None:
    """Moves and a stop alike carry their ply, so that a late one is never played as another:
    seen on the wire, through a tap."""
    assert arena.tcp_port is not None
    async with tap(arena.tcp_port) as (port, connections):
        whole, stopped = await asyncio.gather(
            play(arena, client("cautious"), client("killer"), via=port),
            play(arena, client("killer"), client("idle"), via=port),
        )
    assert len(connections) == 4
    for connection in connections:
        replies, turns = connection.replies_and_turns()
        assert replies == turns
    answered = sorted(len(connection.replies_and_turns()[0]) for connection in connections)
    assert answered[:2] == [1, 1]  # the killer's one move and the idle troll's stop
    assert answered[-1] >= 10
    stops = [m for c in connections for m in c.from_bot if m.get("stop")]
    assert stops == [{"type": "player-turn", "turn": 2, "stop": True}]
    assert len(whole.turns) >= 20 and len(stopped.turns) == 2


# --- tournaments ---------------------------------------------------------------------------------
def _clients_folder(folder: Path, dwarfs: list[str], trolls: list[str]) -> Path:
    for side, names in ((DWARF, dwarfs), (TROLL, trolls)):
        (folder / side).mkdir(parents=True)
        for name in names:
            shutil.copy(client(name), folder / side / f"{name}.js")
    return folder


TABLE_ROW = re.compile(
    r"^  (\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s+(\d+)\s+(\d+)$"
)  # bot, played, wins, losses, draws, score, crashes, timeouts


def test_a_folder_of_clients_is_a_tournament_in_one_command(node: str, tmp_path: Path) -> None:
    folder = _clients_folder(
        tmp_path / "cup", ["killer", "thrower", "idle"], ["cautious", "peacemaker"]
    )
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"reconnectGraceMs": 0}))  # a bot that leaves forfeits at once
    database = tmp_path / "arena.db"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tavern_cli",
            "tournament",
            str(folder),
            "--config",
            str(config),
            "--database",
            str(database),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cup: 6 games\n")
    printed: dict[str, dict[str, tuple[int, ...]]] = {}
    faults: dict[str, tuple[int, int]] = {}  # crashes and timed-out turns, by bot
    table = ""
    for line in done.stdout.splitlines():
        if line.endswith(" table"):
            table = line.split()[0]
            printed[table] = {}
        elif table and (match := TABLE_ROW.match(line)):
            *counts, crashes, timeouts = (int(value) for value in match.groups()[1:])
            printed[table][match[1]] = tuple(counts)
            faults[match[1]] = (crashes, timeouts)

    # The league by hand, from the recorded games: the winner gains the difference, the loser
    # loses it, a draw changes nothing.
    records = Records(database)
    records.open_to_read()
    try:
        (tournament,) = records.tournaments()
        games = records.games(GameFilter(tournament=tournament["id"]))["games"]
        thrown = next(game for game in games if game["players"][0]["bot"] == "thrower")
        record = records.game(thrown["id"])
    finally:
        records.close()
    assert len(games) == 6
    expected: dict[str, dict[str, list[int]]] = {DWARF: {}, TROLL: {}}
    for game in games:
        result = game["result"]
        difference = abs(result["score"]["dwarfs"] - result["score"]["trolls"])
        for player in game["players"]:
            row = expected[player["seat"]].setdefault(player["bot"], [0, 0, 0, 0, 0])
            row[0] += 1
            if result["winner"] is None:
                row[3] += 1
            elif result["winner"] == player["seat"]:
                row[1] += 1
                row[4] += difference
            else:
                row[2] += 1
                row[4] -= difference
    assert printed == {
        table: {bot: tuple(row) for bot, row in rows.items()} for table, rows in expected.items()
    }
    # Where a result is known in advance: the idle dwarf stops its games at once, scored as
    # they stand (32 v 32: draws), and the thrower loses every game.
    assert printed[DWARF]["idle"] == (2, 0, 0, 2, 0)
    assert printed[DWARF]["thrower"][1:4] == (0, 2, 0)
    # The thrower's process gives up mid-game: two crashes; every other client played its games.
    assert faults == {bot: (2 if bot == "thrower" else 0, 0) for bot in faults}
    assert len(faults) == 5
    reasons = {
        (game["players"][0]["bot"], game["players"][1]["bot"]): game["result"]["reason"]
        for game in games
    }
    assert {reasons["idle", troll] for troll in ("cautious", "peacemaker")} == {"No move"}
    idle_game = next(game for game in games if game["players"][0]["bot"] == "idle")
    assert idle_game["players"][0]["nick"] == "idle"
    assert record is not None
    assert "thrower gives up on its third turn" in record["players"][0]["stderr"]


def test_a_folder_names_its_bots_after_their_files(node: str, tmp_path: Path) -> None:
    folder = _clients_folder(tmp_path / "Spring Cup", ["killer", "idle"], ["killer", "cautious"])
    (folder / "dwarf" / "answers").mkdir()
    shutil.copy(client("thrower"), folder / "dwarf" / "answers" / "thrower.js")
    (folder / "dwarf" / "notes.txt").write_text("not a client")
    spec = load_spec(folder)
    assert spec.name == "Spring Cup"
    assert spec.game == "thud"
    assert re.fullmatch(r"spring-cup-[0-9a-f]{8}", spec.id)
    assert [(e.name, e.sides) for e in spec.entrants] == [
        ("answers/thrower", (DWARF,)),
        ("idle", (DWARF,)),
        ("dwarf/killer", (DWARF,)),  # a name both sides have gets its side in front
        ("cautious", (TROLL,)),
        ("troll/killer", (TROLL,)),
    ]
    assert len(schedule(spec)) == 6
    command = spec.entrants[1].command
    assert command[:2] == ("node", str(ADAPTER))
    assert command[command.index("--file") + 1] == str((folder / "dwarf" / "idle.js").resolve())
    assert command[command.index("--nick") + 1] == "idle"
    # The same files resume the same tournament; a changed client starts a new one.
    assert load_spec(folder).id == spec.id
    (folder / "troll" / "cautious.js").write_text("module.exports = class {};\n")
    assert load_spec(folder).id != spec.id
    shutil.rmtree(folder / "troll")
    with pytest.raises(TournamentError, match="no client files in troll/"):
        load_spec(folder)


def test_a_tournament_file_may_name_client_files(node: str, tmp_path: Path) -> None:
    odd = tmp_path / "we{ir}d"
    odd.mkdir()
    shutil.copy(client("killer"), odd / "killer.js")
    spec = spec_from_mapping(
        {
            "name": "files",
            "game": "thud",
            "bots": [
                {"name": "Killer {1}", "side": "dwarf", "file": "we{ir}d/killer.js"},
                {"name": "house troll", "side": "troll", "command": "{python} -m bots.house_bot"},
            ],
        },
        tmp_path,
    )
    values = {"side": "dwarf", "host": "127.0.0.1", "port": "9", "simulation": "abc"}
    command = [part.format(**values) for part in spec.entrants[0].command]
    assert command == [
        "node",
        str(ADAPTER),
        *("--file", str(odd.resolve() / "killer.js"), "--side", "dwarf"),
        *("--host", "127.0.0.1", "--port", "9", "--simulation", "abc", "--nick", "Killer {1}"),
    ]
    bad: list[tuple[JsonObject, str]] = [
        ({"name": "x", "file": "missing.js"}, "no such file"),
        ({"name": "x", "file": "we{ir}d/killer.js", "command": "node x"}, "not both"),
        ({"name": "x", "file": 3}, "must be a str"),
    ]
    for bot, message in bad:
        with pytest.raises(TournamentError, match=message):
            spec_from_mapping({"name": "t", "game": "thud", "bots": [bot, bot]}, tmp_path)
    file_bot = {"name": "x", "file": "we{ir}d/killer.js"}
    with pytest.raises(TournamentError, match="client files play thud only"):
        spec_from_mapping({"name": "t", "game": "tavern", "bots": [file_bot, file_bot]}, tmp_path)
