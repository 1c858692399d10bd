/*
 * The Thud king-of-the-hill challenge's client controller, backed by the arena's turn messages.
 *
 * Challenge clients are classes `{ constructor(controller, utils); turn(); end_turn(); }` written
 * against the AJFaraday/Thud controller. This file gives them a controller with the same
 * members, return shapes, piece order, move order and quirks (see the reference notes the arena
 * was built from: CONTROLLER.md and RULES.md of the Thud reference), computed from the position
 * the arena sends each turn. It has no dependencies and uses no Node-only API, so the same file
 * runs in Node (`require` gives the API) and in a browser page (a plain <script> or an ES-module
 * import sets `globalThis.ThudController`).
 *
 *   const { createSeat } = ThudController;
 *   const seat = createSeat(ClientClass, 'dwarf', { warn: (text) => ... });
 *   const reply = seat.play(turnMessage.state);   // {move: {from, to}, declare?} or null
 *
 * `createSeat` constructs the client the way the challenge's engine did:
 * `new Client(controller, Object.assign({}, utils))`, then `client.controller = controller`.
 * `seat.play(state)` runs one of the client's turns on the arena's `turn` state:
 *   - `turn()` is called; a successful `move()` applies the move to the controller's board,
 *     calls the client's `end_turn()` right away (inside `move()`, before it returns `true`, as
 *     the engine did), and ends the turn: wrapped members answer `null` from then on.
 *   - it returns the reply to send: the move, plus `declare` when the client's flag differs from
 *     what the arena has, so a `declare()` made in `end_turn()` counts on this very ply.
 *   - it returns `null` when the client made no move (the engine then stopped the game);
 *     it throws whatever the client threw, also when the client caught an error of its own
 *     `end_turn()` (in the engine that error ended the game).
 *
 * Fixed slots (`indexed_dwarfs`/`indexed_trolls`): the arena's turn state lists the pieces in
 * engine order but not their start-position slots. If it carries `dwarfSlots`/`trollSlots`
 * (each piece's index in the start position), they are used. Otherwise the controller follows
 * the pieces itself: it keeps the position after its own move and replays the opponent's
 * `previousMove` on it; a seat sees every ply of its game, so this is exact. Should the replay
 * not give the position the arena sent (a seat that joined mid-game), the pieces take the first
 * slots in order and `warn` says so.
 *
 * Where the arena cannot do what the engine did, the controller says so through `warn` and does
 * the nearest thing: the engine's "teleport" quirk (select A, check B, move to a square only B
 * reaches) and a second move from `end_turn()` return `false` instead of moving.
 *
 * Also exported, for pages and tools: `utils` (what clients get), `rules` (the Thud rules on
 * positions: `initialPosition`, `positionFromWire`, `legalMoves`, `play`, `toWire`, `score`, so
 * a page can play local games without the arena), `forbiddenTerms(source)` (the challenge
 * validator's text checks), `Controller` and `beginTurn` (a controller without a client).
 */
(function (root, factory) {
  'use strict';
  var api = factory();
  if (typeof module === 'object' && module !== null && typeof module.exports === 'object') {
    module.exports = api;
  } else {
    root.ThudController = api;
  }
})(typeof globalThis !== 'undefined' ? globalThis : this, function () {
  'use strict';

  // --- the board ------------------------------------------------------------------------------
  // A cell is x + 15 * y for every (x, y) of the 15x15 grid; the tables below are indexed by cell
  // and are empty for cells that are not squares.
  const SIZE = 15;
  const CELLS = SIZE * SIZE;
  const STONE = { x: 7, y: 7 }; // the Thudstone: not a square, rays stop there
  const EMPTY = 0;
  const DWARF = 1;
  const TROLL = 2;
  const DWARF_COUNT = 32;
  const TROLL_COUNT = 8;
  const TROLL_VALUE = 4;
  const MAX_PLIES = 500;
  // The engine always goes round in this order: N, NE, E, SE, S, SW, W, NW (y grows downwards).
  const DIRECTIONS = [[0, -1], [1, -1], [1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1]];
  const opposite = (direction) => (direction + 4) % 8;

  function isSquare(x, y) {
    return (
      x >= 0 && x < SIZE && y >= 0 && y < SIZE &&
      Math.min(x, SIZE - 1 - x) + Math.min(y, SIZE - 1 - y) >= 5 &&
      !(x === STONE.x && y === STONE.y)
    );
  }

  const cellOf = (x, y) => x + SIZE * y;
  const xOf = (cell) => cell % SIZE;
  const yOf = (cell) => (cell - (cell % SIZE)) / SIZE;
  const coord = (cell) => ({ x: xOf(cell), y: yOf(cell) });

  const SQUARE_CELLS = []; // the 164 squares, row by row (the engine's `spaces()` order)
  const RAYS = []; // RAYS[cell][direction]: the squares going outwards up to the edge or the stone
  const NEIGHBOURS = []; // the existing neighbours, in direction order
  for (let cell = 0; cell < CELLS; cell++) {
    const x = xOf(cell);
    const y = yOf(cell);
    const rays = [];
    if (isSquare(x, y)) {
      SQUARE_CELLS.push(cell);
      for (const [dx, dy] of DIRECTIONS) {
        const ray = [];
        for (let nx = x + dx, ny = y + dy; isSquare(nx, ny); nx += dx, ny += dy) {
          ray.push(cellOf(nx, ny));
        }
        rays.push(ray);
      }
    } else {
      for (let d = 0; d < 8; d++) rays.push([]);
    }
    RAYS.push(rays);
    NEIGHBOURS.push(rays.filter((ray) => ray.length > 0).map((ray) => ray[0]));
  }

  // Dwarfs start on the octagon's outline except the middle of each long side; trolls ring the
  // stone. Both lists are in row-major order, which is the engine's piece order.
  function onOutline(cell) {
    const x = xOf(cell);
    const y = yOf(cell);
    return [[0, -1], [1, 0], [0, 1], [-1, 0]].some(
      ([dx, dy]) => !isSquare(x + dx, y + dy) && !(x + dx === STONE.x && y + dy === STONE.y)
    );
  }
  const START_DWARFS = SQUARE_CELLS.filter(
    (cell) => onOutline(cell) && xOf(cell) !== STONE.x && yOf(cell) !== STONE.y
  );
  const START_TROLLS = SQUARE_CELLS.filter(
    (cell) => Math.max(Math.abs(xOf(cell) - STONE.x), Math.abs(yOf(cell) - STONE.y)) === 1
  );

  // The cell of a square given the way the engine looked squares up (`rows[y][x]`): numbers and
  // canonical integer strings both work; anything else, or a cell that is no square, gives -1.
  function lookup(x, y) {
    const ix = asIndex(x);
    const iy = asIndex(y);
    return ix >= 0 && iy >= 0 && isSquare(ix, iy) ? cellOf(ix, iy) : -1;
  }
  function asIndex(value) {
    if (typeof value === 'number') return Number.isInteger(value) ? value : -1;
    if (typeof value === 'string' && /^(0|[1-9][0-9]*)$/.test(value)) return Number(value);
    return -1;
  }

  // --- positions ------------------------------------------------------------------------------
  // A position never changes once made; moves, danger maps and the like are cached on it.
  function makePosition(fields) {
    const cells = new Uint8Array(CELLS);
    for (const cell of fields.dwarfs) cells[cell] = DWARF;
    for (const cell of fields.trolls) cells[cell] = TROLL;
    return {
      ply: fields.ply,
      dwarfs: fields.dwarfs, // cells, in engine order
      trolls: fields.trolls,
      dwarfSlots: fields.dwarfSlots, // each piece's index in the start position
      trollSlots: fields.trollSlots,
      declared: fields.declared || { dwarf: false, troll: false },
      previousMove: fields.previousMove || null, // {from, to, kind, killed: [cells]}
      endReason: fields.endReason || null,
      cells: cells,
      movesCache: new Map(),
      dangerCache: new Map(),
    };
  }

  const range = (n) => Array.from({ length: n }, (_, i) => i);

  function initialPosition() {
    return makePosition({
      ply: 1,
      dwarfs: START_DWARFS.slice(),
      trolls: START_TROLLS.slice(),
      dwarfSlots: range(DWARF_COUNT),
      trollSlots: range(TROLL_COUNT),
    });
  }

  function squareCell(value) {
    const x = Array.isArray(value) ? value[0] : value && value.x;
    const y = Array.isArray(value) ? value[1] : value && value.y;
    const cell = lookup(x, y);
    if (cell < 0) throw new Error('not a square of the board: ' + JSON.stringify(value));
    return cell;
  }

  function validSlots(slots, count, limit) {
    if (!Array.isArray(slots) || slots.length !== count) return false;
    return slots.every((s, i) => Number.isInteger(s) && s >= 0 && s < limit && (i === 0 || s > slots[i - 1]));
  }

  // The arena's turn state ({ply, dwarfs: [[x, y]], trolls, declared, previousMove, ...}) as a
  // position. Slots come from `dwarfSlots`/`trollSlots` when given, else the first ones in order.
  function positionFromWire(state) {
    const dwarfs = state.dwarfs.map(squareCell);
    const trolls = state.trolls.map(squareCell);
    const sent = validSlots(state.dwarfSlots, dwarfs.length, DWARF_COUNT) &&
      validSlots(state.trollSlots, trolls.length, TROLL_COUNT);
    const previous = state.previousMove;
    return makePosition({
      ply: state.ply,
      dwarfs: dwarfs,
      trolls: trolls,
      dwarfSlots: sent ? state.dwarfSlots.slice() : range(dwarfs.length),
      trollSlots: sent ? state.trollSlots.slice() : range(trolls.length),
      declared: {
        dwarf: Boolean(state.declared && state.declared.dwarf),
        troll: Boolean(state.declared && state.declared.troll),
      },
      previousMove: previous
        ? {
          from: squareCell(previous.from),
          to: squareCell(previous.to),
          kind: previous.kind,
          killed: (previous.killed || []).map(squareCell),
        }
        : null,
    });
  }

  const sideToMove = (position) => (position.ply % 2 === 1 ? 'dwarf' : 'troll');

  // --- moves ----------------------------------------------------------------------------------
  // A move record: {from, to, kind: 'walk'|'hurl'|'shove', killed: [cells]}.

  // How many `piece`s stand in a row from `cell` (itself included) going `direction`.
  function lineLength(cells, cell, direction, piece) {
    let length = 1;
    for (const next of RAYS[cell][direction]) {
      if (cells[next] !== piece) break;
      length += 1;
    }
    return length;
  }

  // Per direction: the walks by increasing distance, then the hurl onto the first troll if the
  // line of dwarfs behind the mover is at least as long as the distance.
  function dwarfMoves(cells, cell, out) {
    RAYS[cell].forEach((ray, direction) => {
      let distance = 0;
      while (distance < ray.length && cells[ray[distance]] === EMPTY) {
        out.push({ from: cell, to: ray[distance], kind: 'walk', killed: [] });
        distance += 1;
      }
      if (
        distance < ray.length &&
        cells[ray[distance]] === TROLL &&
        distance < lineLength(cells, cell, opposite(direction), DWARF)
      ) {
        out.push({ from: cell, to: ray[distance], kind: 'hurl', killed: [ray[distance]] });
      }
    });
  }

  const adjacentDwarfs = (cells, cell) => NEIGHBOURS[cell].filter((n) => cells[n] === DWARF);

  // Empty squares 2..(trolls in line) away with a clear path, by direction then distance: the
  // troll's shoves before the "a dwarf must be next to it" condition (in_danger uses them all).
  function shoveLandings(cells, cell) {
    const landings = [];
    const rays = RAYS[cell];
    rays.forEach((ray, direction) => {
      const behind = rays[opposite(direction)];
      if (ray.length < 2 || cells[ray[0]] !== EMPTY || !behind.length || cells[behind[0]] !== TROLL) {
        return;
      }
      const reach = Math.min(lineLength(cells, cell, opposite(direction), TROLL), ray.length);
      for (let i = 1; i < reach; i++) {
        if (cells[ray[i]] !== EMPTY) break;
        landings.push(ray[i]);
      }
    });
    return landings;
  }

  // First every walk (to an empty neighbour) in direction order, then the shoves. A troll kills
  // every dwarf next to where it lands.
  function trollMoves(cells, cell, out) {
    for (const ray of RAYS[cell]) {
      if (ray.length && cells[ray[0]] === EMPTY) {
        out.push({ from: cell, to: ray[0], kind: 'walk', killed: adjacentDwarfs(cells, ray[0]) });
      }
    }
    for (const landing of shoveLandings(cells, cell)) {
      const killed = adjacentDwarfs(cells, landing);
      if (killed.length) out.push({ from: cell, to: landing, kind: 'shove', killed: killed });
    }
  }

  // The moves of whatever piece stands on `cell`, in the engine's order ([] on an empty square).
  function pieceMoves(position, cell) {
    let moves = position.movesCache.get(cell);
    if (!moves) {
      moves = [];
      if (position.cells[cell] === DWARF) dwarfMoves(position.cells, cell, moves);
      else if (position.cells[cell] === TROLL) trollMoves(position.cells, cell, moves);
      position.movesCache.set(cell, moves);
    }
    return moves;
  }

  function legalMoveRecords(position) {
    if (position.endReason) return [];
    const own = position.ply % 2 === 1 ? position.dwarfs : position.trolls;
    return [].concat(...own.map((cell) => pieceMoves(position, cell)));
  }

  // --- in_danger ------------------------------------------------------------------------------
  // The engine's heuristic, judged on the board before the move. For the dwarfs: within two
  // squares (Chebyshev, across the stone) of a troll, or next to a square a troll could be
  // shoved to (dwarfs nearby or not). For the trolls: a square a line of dwarfs could hurl onto,
  // at distance 2 or more, or at distance 1 only if a troll stands there (a lone dwarf's
  // neighbours are not flagged).
  function dangerMap(position, side) {
    let map = position.dangerCache.get(side);
    if (map) return map;
    map = new Uint8Array(CELLS);
    const cells = position.cells;
    if (side === 'dwarf') {
      for (const troll of position.trolls) {
        const x = xOf(troll);
        const y = yOf(troll);
        for (let dy = -2; dy <= 2; dy++) {
          for (let dx = -2; dx <= 2; dx++) {
            if ((dx || dy) && isSquare(x + dx, y + dy)) map[cellOf(x + dx, y + dy)] = 1;
          }
        }
        for (const landing of shoveLandings(cells, troll)) {
          for (const next of NEIGHBOURS[landing]) map[next] = 1;
        }
      }
    } else {
      for (const dwarf of position.dwarfs) {
        const rays = RAYS[dwarf];
        rays.forEach((ray, direction) => {
          if (!ray.length) return;
          if (cells[ray[0]] !== EMPTY) {
            if (cells[ray[0]] === TROLL) map[ray[0]] = 1;
            return;
          }
          const behind = rays[opposite(direction)];
          if (!behind.length || cells[behind[0]] !== DWARF) return; // a lone dwarf reaches 1
          const reach = Math.min(lineLength(cells, dwarf, opposite(direction), DWARF), ray.length);
          for (let i = 1; i < reach; i++) {
            map[ray[i]] = 1;
            if (cells[ray[i]] !== EMPTY) break;
          }
        });
      }
    }
    position.dangerCache.set(side, map);
    return map;
  }

  const sideName = (piece) => (piece === DWARF ? 'dwarf' : piece === TROLL ? 'troll' : null);

  // --- nearest pieces -------------------------------------------------------------------------
  // Square rings at Chebyshev distance 1, 2, ... 15 around (x, y); the first ring holding a piece
  // of the kind wins. Ring order: the top row from right to left, then each middle row's left and
  // right cells from top to bottom, then the bottom row from right to left.
  function nearest(position, x, y, piece) {
    for (let d = 1; d <= 15; d++) {
      const found = [];
      const consider = (cx, cy) => {
        if (isSquare(cx, cy) && position.cells[cellOf(cx, cy)] === piece) found.push({ x: cx, y: cy });
      };
      for (let cx = x + d; cx >= x - d; cx--) consider(cx, y - d);
      for (let cy = y - d + 1; cy <= y + d - 1; cy++) {
        consider(x - d, cy);
        consider(x + d, cy);
      }
      for (let cx = x + d; cx >= x - d; cx--) consider(cx, y + d);
      if (found.length) return { distance: d, pieces: found };
    }
    return { distance: 15, pieces: [] };
  }

  // --- playing a move -------------------------------------------------------------------------
  function score(position) {
    const dwarfs = position.dwarfs.length;
    const trolls = TROLL_VALUE * position.trolls.length;
    return {
      dwarfs: dwarfs,
      trolls: trolls,
      difference: Math.abs(dwarfs - trolls),
      winning: dwarfs === trolls ? '?' : dwarfs > trolls ? 'd' : 't',
    };
  }

  // The position after the side to move plays from -> to (cells), or null if that is not legal.
  // `declare` (optional) sets the mover's flag. The end checks are the engine's, in its order,
  // plus the arena's "No legal moves".
  function playCells(position, from, to, declare) {
    if (position.endReason) return null;
    const side = sideToMove(position);
    if (sideName(position.cells[from]) !== side) return null;
    const move = pieceMoves(position, from).find((m) => m.to === to);
    if (!move) return null;
    const moverIsDwarf = side === 'dwarf';
    const movers = (moverIsDwarf ? position.dwarfs : position.trolls).slice();
    movers[movers.indexOf(from)] = to; // a moving piece keeps its place in the order
    const victims = moverIsDwarf ? position.trolls : position.dwarfs;
    const victimSlots = moverIsDwarf ? position.trollSlots : position.dwarfSlots;
    const kept = range(victims.length).filter((i) => move.killed.indexOf(victims[i]) < 0);
    const survivors = kept.map((i) => victims[i]);
    const survivorSlots = kept.map((i) => victimSlots[i]);
    const declared = { dwarf: position.declared.dwarf, troll: position.declared.troll };
    if (declare !== undefined && declare !== null) declared[side] = Boolean(declare);
    const dwarfs = moverIsDwarf ? movers : survivors;
    const trolls = moverIsDwarf ? survivors : movers;
    let endReason = null;
    if (position.ply >= MAX_PLIES) endReason = 'Timeout';
    else if (!dwarfs.length) endReason = 'No more dwarfs';
    else if (!trolls.length) endReason = 'No more trolls';
    else if (declared.dwarf && declared.troll) endReason = 'Players agreed to finish';
    const after = makePosition({
      ply: position.ply + 1,
      dwarfs: dwarfs,
      trolls: trolls,
      dwarfSlots: moverIsDwarf ? position.dwarfSlots : survivorSlots,
      trollSlots: moverIsDwarf ? survivorSlots : position.trollSlots,
      declared: declared,
      previousMove: { from: from, to: to, kind: move.kind, killed: move.killed },
      endReason: endReason,
    });
    if (!endReason && !legalMoveRecords(after).length) after.endReason = 'No legal moves';
    return after;
  }

  const sameList = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

  // --- the rules, for pages and tools that play without the arena -----------------------------
  const moveToWire = (m) => ({
    from: [xOf(m.from), yOf(m.from)],
    to: [xOf(m.to), yOf(m.to)],
    kind: m.kind,
    kills: m.killed.length,
  });

  const rules = {
    SIZE: SIZE,
    THUDSTONE: [STONE.x, STONE.y],
    MAX_PLIES: MAX_PLIES,
    isSquare: isSquare,
    squares: () => SQUARE_CELLS.map((cell) => [xOf(cell), yOf(cell)]),
    initialPosition: initialPosition,
    positionFromWire: positionFromWire,
    sideToMove: sideToMove,
    score: score,
    // Every legal move of the side to move, as the arena lists them: {from, to, kind, kills}.
    legalMoves: (position) => legalMoveRecords(position).map(moveToWire),
    // The position after a move ([x, y] or {x, y} squares), or null if it is not legal.
    play: (position, from, to, declare) => playCells(position, squareCell(from), squareCell(to), declare),
    // A position as the arena's turn state, with the slots the arena may add.
    toWire: (position) => ({
      ply: position.ply,
      side: sideToMove(position),
      dwarfs: position.dwarfs.map((c) => [xOf(c), yOf(c)]),
      trolls: position.trolls.map((c) => [xOf(c), yOf(c)]),
      score: { dwarfs: position.dwarfs.length, trolls: TROLL_VALUE * position.trolls.length },
      declared: { dwarf: position.declared.dwarf, troll: position.declared.troll },
      previousMove: position.previousMove
        ? {
          from: [xOf(position.previousMove.from), yOf(position.previousMove.from)],
          to: [xOf(position.previousMove.to), yOf(position.previousMove.to)],
          kind: position.previousMove.kind,
          killed: position.previousMove.killed.map((c) => [xOf(c), yOf(c)]),
        }
        : null,
      moves: legalMoveRecords(position).map(moveToWire),
      dwarfSlots: position.dwarfSlots.slice(),
      trollSlots: position.trollSlots.slice(),
    }),
  };

  // --- utils (what clients get as their second constructor argument) -------------------------
  // distance_between is Manhattan (the engine used Chebyshev internally). closest_to and
  // farthest_from write `.distance` on every element and sort the list in place; the sort is
  // stable, so the first of equally distant elements wins.
  const utils = {
    distance_between: function (source, target) {
      return Math.abs(source.x - target.x) + Math.abs(source.y - target.y);
    },
    farthest_from: function (spaces, target) {
      spaces.forEach((space) => {
        space.distance = utils.distance_between(space, target);
      });
      return spaces.sort((a, b) => b.distance - a.distance)[0];
    },
    closest_to: function (spaces, target) {
      spaces.forEach((space) => {
        space.distance = utils.distance_between(space, target);
      });
      return spaces.sort((a, b) => a.distance - b.distance)[0];
    },
  };

  // --- the controller -------------------------------------------------------------------------
  // Its working state is kept out of sight of clients, in this map.
  const internals = new WeakMap();
  const PIECE_CODES = { dwarf: 'd', troll: 't' };

  function sideOf(value) {
    if (value === 'dwarf' || value === 'd') return 'dwarf';
    if (value === 'troll' || value === 't') return 'troll';
    throw new Error('side must be "dwarf" or "troll", not ' + JSON.stringify(value));
  }

  const GAME_START = () => ({ side: '?', from: { x: 0, y: 0 }, to: { x: 0, y: 0 }, type: 'game_start', killed: 0 });

  class Controller {
    constructor(side, options) {
      const name = sideOf(side);
      const warn = (options && options.warn) || defaultWarn;
      internals.set(this, {
        side: name,
        piece: name === 'dwarf' ? DWARF : TROLL,
        position: initialPosition(),
        ply: 1, // the ply being played: the engine's turn_number, which a move does not change
        after: null, // the position after this side's last move, to follow the slots
        // 'idle' between turns, 'turn' until a move is made, 'end_turn' while end_turn() runs,
        // 'moved' once the turn is over. Wrapped members only answer in 'turn' and 'end_turn'.
        phase: 'idle',
        played: null, // {from, to} cells of this turn's move
        previous: GAME_START(), // what previous_move() hands out: the live object
        opponentDeclared: undefined,
        opponentEverDeclared: false,
        endTurn: null, // set by createSeat: calls the client's end_turn()
        endTurnError: null,
        movesChecked: false,
        warn: warn,
      });
      this.side = PIECE_CODES[name];
      this.current_space = null;
      this.turn_cache = {};
    }

    // Wrapped members only act on the controller's own turn; otherwise they answer null.
    _wrapped(work) {
      const phase = internals.get(this).phase;
      return phase === 'turn' || phase === 'end_turn' ? work() : null;
    }

    turn() {
      return this._wrapped(() => internals.get(this).ply);
    }

    scores() {
      return score(internals.get(this).position);
    }

    spaces() {
      const position = internals.get(this).position;
      return SQUARE_CELLS.map((cell) => ({ x: xOf(cell), y: yOf(cell), piece: pieceCode(position.cells[cell]) }));
    }

    space_info(x, y) {
      const cell = lookup(x, y);
      return cell < 0 ? null : spaceInfo(internals.get(this), cell);
    }

    pieces() {
      return internals.get(this).side === 'dwarf' ? this.dwarfs() : this.trolls();
    }

    dwarfs() {
      return internals.get(this).position.dwarfs.map(coord);
    }

    dwarves() {
      return this.dwarfs();
    }

    trolls() {
      return internals.get(this).position.trolls.map(coord);
    }

    indexed_dwarfs() {
      const position = internals.get(this).position;
      return indexed(position.dwarfs, position.dwarfSlots, DWARF_COUNT);
    }

    indexed_dwarves() {
      return this.indexed_dwarfs();
    }

    indexed_trolls() {
      const position = internals.get(this).position;
      return indexed(position.trolls, position.trollSlots, TROLL_COUNT);
    }

    // The live object, as in the engine: a client that changes it sees its change next time.
    previous_move() {
      return internals.get(this).previous;
    }

    killing_moves() {
      const inner = internals.get(this);
      const own = inner.side === 'dwarf' ? inner.position.dwarfs : inner.position.trolls;
      const found = [];
      for (const cell of own) {
        for (const move of pieceMoves(inner.position, cell)) {
          if (move.killed.length) found.push({ from: coord(cell), to: coord(move.to), kills: move.killed.length });
        }
      }
      return found;
    }

    check_space(x, y) {
      return this._wrapped(() => {
        const inner = internals.get(this);
        const cell = lookup(x, y);
        if (cell < 0) {
          // The engine read the properties of a square that does not exist.
          throw new TypeError('check_space(' + x + ', ' + y + '): there is no such square');
        }
        const info = spaceInfo(inner, cell);
        const own = inner.position.cells[cell] === inner.piece;
        this.checked_space = { x: info.x, y: info.y, moves: own ? info.moves : [], in_danger: info.in_danger };
        return own ? info : null;
      });
    }

    select_space(x, y) {
      return this._wrapped(() => {
        const inner = internals.get(this);
        const cell = lookup(x, y);
        if (cell < 0) return undefined;
        const checked = this.checked_space;
        if (!checked || checked.x !== xOf(cell) || checked.y !== yOf(cell)) {
          this.checked_space = checkedSpace(inner, cell);
        }
        const piece = inner.position.cells[cell];
        if (piece === inner.piece) {
          this.current_space = { x: xOf(cell), y: yOf(cell), piece: pieceCode(piece) };
          return true;
        }
        this.clear_space();
        return false;
      });
    }

    check_move(x, y) {
      const inner = internals.get(this);
      const target = lookup(x, y);
      const current = this.current_space;
      if (!current || target < 0) return undefined;
      const from = lookup(current.x, current.y);
      if (from < 0) return undefined;
      // Like the engine, this re-checks the selected space (checked_space follows it).
      this.checked_space = checkedSpace(inner, from);
      const move = this.checked_space.moves.find((m) => m.x === xOf(target) && m.y === yOf(target));
      if (!move) return { valid: false, type: null, kills: 0, targets: [] };
      if (inner.side === 'dwarf') {
        const hurl = move.type === 'hurl';
        return { valid: true, type: move.type, kills: hurl ? 1 : 0, targets: hurl ? [coord(target)] : [] };
      }
      const targets = adjacentDwarfs(inner.position.cells, target).map(coord);
      return { valid: true, type: move.type, kills: targets.length, targets: targets };
    }

    move(x, y) {
      return this._wrapped(() => {
        const inner = internals.get(this);
        // As in the engine: a TypeError if nothing was checked, and a loose comparison, so
        // move('3', '4') finds (3, 4).
        const target = this.checked_space.moves.find((m) => m.x == x && m.y == y);
        if (!target) {
          this.clear_space();
          return false;
        }
        const current = this.current_space;
        const from = lookup(current.x, current.y); // a TypeError without a selection
        const to = cellOf(target.x, target.y);
        if (inner.phase !== 'turn') {
          inner.warn('move(' + x + ', ' + y + ') from end_turn(): the arena plays one move per turn; ignored');
          this.clear_space();
          return false;
        }
        const after = from < 0 ? null : playCells(inner.position, from, to);
        if (!after) {
          // The engine moved the selected piece to a square taken from another piece's moves.
          inner.warn(
            'move(' + x + ', ' + y + '): the selected piece on (' + current.x + ', ' + current.y +
            ') cannot go there (the moves checked were those of (' + this.checked_space.x + ', ' +
            this.checked_space.y + ')); the arena does not allow it, so the move is refused'
          );
          this.clear_space();
          return false;
        }
        const move = after.previousMove;
        inner.position = after;
        inner.after = after;
        inner.played = { from: from, to: to };
        inner.previous = {
          from: coord(from),
          to: coord(to),
          side: this.side,
          type: move.kind,
          killed: move.killed.length,
        };
        this.clear_space();
        // The engine called end_turn() from inside move(), before the end-of-game checks.
        inner.phase = 'end_turn';
        try {
          if (inner.endTurn) inner.endTurn();
        } catch (error) {
          inner.endTurnError = error;
          throw error;
        } finally {
          inner.phase = 'moved';
        }
        return true;
      });
    }

    clear_space() {
      this.current_space = null;
      this.checked_space = null;
    }

    declare(game_over) {
      this.declared = game_over;
    }

    opponent_declared() {
      return internals.get(this).opponentDeclared;
    }

    // A memo for the current ply (keyed by turn(), so it is shared by every off-turn call).
    turn_cached(key, compute) {
      const ply = this.turn();
      if (this.turn_cache.turn !== ply) this.turn_cache = { turn: ply, values: {} };
      if (!(key in this.turn_cache.values)) this.turn_cache.values[key] = compute();
      return this.turn_cache.values[key];
    }
  }

  function defaultWarn(text) {
    if (typeof console !== 'undefined') console.warn('thud-controller: ' + text);
  }

  const pieceCode = (piece) => (piece === DWARF ? 'd' : piece === TROLL ? 't' : null);

  function indexed(cells, slots, count) {
    const list = new Array(count).fill(null);
    cells.forEach((cell, i) => {
      list[slots[i]] = coord(cell);
    });
    return list;
  }

  // Fresh objects every time: clients write on them (closest_to adds `distance`).
  function spaceInfo(inner, cell) {
    const position = inner.position;
    const piece = position.cells[cell];
    let moves = [];
    if (piece !== EMPTY) {
      const danger = dangerMap(position, sideName(piece)); // a move is judged for its mover
      moves = pieceMoves(position, cell).map((m) => ({
        x: xOf(m.to),
        y: yOf(m.to),
        type: m.kind,
        kills: m.killed.length,
        in_danger: danger[m.to] === 1,
      }));
    }
    const x = xOf(cell);
    const y = yOf(cell);
    return {
      x: x,
      y: y,
      piece: pieceCode(piece),
      moves: moves,
      safe_moves: moves.filter((m) => !m.in_danger),
      nearest_dwarf: nearest(position, x, y, DWARF),
      nearest_troll: nearest(position, x, y, TROLL),
      in_danger: dangerMap(position, inner.side)[cell] === 1, // the square, for the asking side
    };
  }

  // What the engine kept as checked_space: the moves of the square if this side's piece is there.
  function checkedSpace(inner, cell) {
    const info = spaceInfo(inner, cell);
    const own = inner.position.cells[cell] === inner.piece;
    return { x: info.x, y: info.y, moves: own ? info.moves : [], in_danger: info.in_danger };
  }

  // A new turn: the arena's state becomes the controller's board.
  function beginTurn(controller, state) {
    const inner = internals.get(controller);
    const sent = positionFromWire(state);
    let position = sent;
    const slotsSent = validSlots(state.dwarfSlots, sent.dwarfs.length, DWARF_COUNT) &&
      validSlots(state.trollSlots, sent.trolls.length, TROLL_COUNT);
    if (!slotsSent) {
      // Follow the pieces: our position after our last move (or the start), then the
      // opponent's move.
      let followed = inner.after || initialPosition();
      if (sent.previousMove && followed.ply === sent.ply - 1) {
        followed = playCells(followed, sent.previousMove.from, sent.previousMove.to) || followed;
      }
      if (sameList(followed.dwarfs, sent.dwarfs) && sameList(followed.trolls, sent.trolls)) {
        position = makePosition({
          ply: sent.ply,
          dwarfs: sent.dwarfs,
          trolls: sent.trolls,
          dwarfSlots: followed.dwarfSlots,
          trollSlots: followed.trollSlots,
          declared: sent.declared,
          previousMove: sent.previousMove,
        });
      } else {
        inner.warn('ply ' + sent.ply + ': could not follow the pieces from the previous turn; ' +
          'indexed_dwarfs/indexed_trolls use the first slots in order');
      }
    }
    if (Array.isArray(state.moves) && !inner.movesChecked) {
      const mine = legalMoveRecords(position).map(moveToWire);
      const same = mine.length === state.moves.length && mine.every((m, i) => {
        const theirs = state.moves[i];
        return sameList(m.from, theirs.from) && sameList(m.to, theirs.to) &&
          m.kind === theirs.kind && m.kills === theirs.kills;
      });
      if (!same) {
        inner.movesChecked = true; // say it once per game
        inner.warn('ply ' + sent.ply + ': the arena lists other legal moves than this controller');
      }
    }
    inner.position = position;
    inner.ply = position.ply;
    const previous = position.previousMove;
    if (previous) {
      inner.previous = {
        from: coord(previous.from),
        to: coord(previous.to),
        side: position.ply % 2 === 1 ? 't' : 'd',
        type: previous.kind,
        killed: previous.killed.length,
      };
    }
    const opponent = inner.side === 'dwarf' ? 'troll' : 'dwarf';
    if (position.declared[opponent]) inner.opponentEverDeclared = true;
    // The engine gave undefined until the other side ever declared.
    inner.opponentDeclared = position.declared[opponent] ? true : inner.opponentEverDeclared ? false : undefined;
    inner.played = null;
    inner.endTurnError = null;
    inner.phase = 'turn';
  }

  // --- seats ----------------------------------------------------------------------------------
  function createSeat(ClientClass, side, options) {
    const controller = new Controller(side, options);
    const client = new ClientClass(controller, Object.assign({}, utils));
    client.controller = controller;
    const inner = internals.get(controller);
    inner.endTurn = () => client.end_turn();
    return {
      controller: controller,
      client: client,
      // One turn of the client on the arena's turn state: the reply to send, or null when the
      // client made no move. Throws what the client threw.
      play: function (state) {
        beginTurn(controller, state);
        try {
          client.turn();
        } finally {
          inner.phase = 'idle';
        }
        if (inner.endTurnError) throw inner.endTurnError; // even if the client caught it
        if (!inner.played) return null;
        const reply = {
          move: {
            from: [xOf(inner.played.from), yOf(inner.played.from)],
            to: [xOf(inner.played.to), yOf(inner.played.to)],
          },
        };
        const flag = Boolean(controller.declared);
        if (flag !== Boolean(state.declared && state.declared[inner.side])) reply.declare = flag;
        return reply;
      },
    };
  }

  // The challenge's validator refused source text containing these.
  const FORBIDDEN_TERMS = ['game.', 'Math.random', 'setTimeout', 'setInterval', 'eval', 'require', 'import'];
  const forbiddenTerms = (source) => FORBIDDEN_TERMS.filter((term) => source.indexOf(term) >= 0);

  return {
    createSeat: createSeat,
    Controller: Controller,
    beginTurn: beginTurn,
    utils: utils,
    rules: rules,
    forbiddenTerms: forbiddenTerms,
    FORBIDDEN_TERMS: FORBIDDEN_TERMS,
  };
});
