// The /clients page's shelf: a person's Thud clients, kept in this browser's localStorage.
//
// One key holds everything: {version: 1, selected: id, clients: [{id, name, side, source,
// checked: {hash, ok} | undefined}]}. Nothing leaves the browser unless the person downloads a
// client or plays it.

export const STORAGE_KEY = "visor.clients";
const MAX_NAME = 64;

// Offered for every new client: plays either side, passes validation, and shows the controller's
// main calls. (No forbidden term may appear in it, comments included.) It looks one move ahead on
// a copy of the board. As the dwarfs it beats the house random player and holds out against the
// house troll to the last ply, taking trolls in most games; as the trolls it beats both house
// players of the dwarfs (measured: bench/clients_starter.py, docs/tournaments.md).
export const STARTER = `// A Thud client in the style of the king-of-the-hill challenge.
// The arena calls turn() on each of your turns and end_turn() right after your move.
const DIRECTIONS = [[0, -1], [1, -1], [1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1]];

module.exports = class {
  constructor(controller, utils) {
    this.controller = controller; // your only way to look at the board and to move
    this.utils = utils; // distance_between, closest_to, farthest_from
  }

  turn() {
    const c = this.controller;
    const dwarfs = c.side === 'd';
    // Dwarfs kill when they can (a troll is worth 4 dwarfs): killing_moves() lists
    // {from, to, kills} for your pieces.
    const kills = c.killing_moves();
    if (dwarfs && kills.length > 0) {
      c.select_space(kills[0].from.x, kills[0].from.y);
      c.move(kills[0].to.x, kills[0].to.y);
      return;
    }
    // Otherwise try every move of every piece on a copy of the board and play the best one.
    // spaces() is the whole board: {x, y, piece} with piece 'd', 't' or null.
    this.board = new Map(c.spaces().map((s) => [s.x + ',' + s.y, s.piece]));
    let best = null;
    for (const piece of c.pieces()) {
      // space_info(x, y).moves: where the piece can go, {x, y, type, kills, in_danger}.
      for (const move of c.space_info(piece.x, piece.y).moves) {
        const score = dwarfs ? this.weighDwarf(piece, move) : this.weighTroll(piece, move);
        if (!best || score > best.score) best = { piece: piece, move: move, score: score };
      }
    }
    // select_space picks the piece, move sends it (one move per turn).
    c.select_space(best.piece.x, best.piece.y);
    c.move(best.move.x, best.move.y);
  }

  // Dwarfs look one move ahead: after this move, what could the trolls take in reply (a troll
  // kills every dwarf next to where it lands), and how many trolls could our lines hurl at?
  weighDwarf(piece, move) {
    const from = piece.x + ',' + piece.y;
    const to = move.x + ',' + move.y;
    this.board.set(from, null);
    this.board.set(to, 'd');
    let lost = 0; // the most one troll move could kill, less 4 if it would be hurled at then
    const exposed = new Set(); // every dwarf some troll move could kill so
    let threats = 0; // trolls a line of dwarfs could hurl at next turn
    for (const [square, there] of this.board) {
      if (there !== 't') continue;
      const [x, y] = square.split(',').map(Number);
      if (this.hurlable(x, y)) threats++;
      for (const [tx, ty] of this.trollMoves(x, y)) {
        const gain = this.trollGain(x, y, tx, ty);
        lost = Math.max(lost, gain);
        if (gain > 0) this.dwarfsNextTo(tx, ty).forEach((d) => exposed.add(d));
      }
    }
    this.board.set(to, null);
    this.board.set(from, 'd');
    // Stay in solid groups: neighbours make the lines that hurl, and lines cover each other.
    const friends = this.dwarfsNextTo(move.x, move.y).filter((d) => d !== from).length;
    return -100 * lost - 30 * exposed.size + 10 * threats + 2 * friends;
  }

  // Trolls kill, but never where a line of dwarfs could hurl at a troll next; otherwise they
  // close in on the dwarfs and keep together, in lines that can shove.
  weighTroll(piece, move) {
    const from = piece.x + ',' + piece.y;
    const to = move.x + ',' + move.y;
    const dead = this.dwarfsNextTo(move.x, move.y);
    this.board.set(from, null);
    this.board.set(to, 't');
    dead.forEach((d) => this.board.set(d, null));
    let exposed = 0;
    let closest = 99;
    let friends = 0;
    for (const [square, there] of this.board) {
      const [x, y] = square.split(',').map(Number);
      const distance = Math.max(Math.abs(x - move.x), Math.abs(y - move.y));
      if (there === 't' && this.hurlable(x, y)) exposed++;
      if (there === 't' && distance === 1) friends++;
      if (there === 'd') closest = Math.min(closest, distance);
    }
    dead.forEach((d) => this.board.set(d, 'd'));
    this.board.set(to, null);
    this.board.set(from, 't');
    return 100 * (dead.length - 4 * exposed) - 2 * closest + 2 * friends;
  }

  // Where a troll at (x, y) can go: a step to an empty neighbour, or a shove along the line of
  // trolls behind it, as far as the line is long, onto an empty square next to a dwarf.
  trollMoves(x, y) {
    const moves = [];
    for (const [dx, dy] of DIRECTIONS) {
      const reach = this.line(x, y, -dx, -dy, 't');
      for (let k = 1; k <= reach; k++) {
        const [tx, ty] = [x + dx * k, y + dy * k];
        if (this.board.get(tx + ',' + ty) !== null) break; // a piece, the edge or the Thudstone
        if (k === 1 || this.dwarfsNextTo(tx, ty).length > 0) moves.push([tx, ty]);
      }
    }
    return moves;
  }

  // What the trolls gain by moving (x, y) to (tx, ty): the dwarfs next to it, less 4 if a line
  // of dwarfs could hurl onto it once they are gone.
  trollGain(x, y, tx, ty) {
    const dead = this.dwarfsNextTo(tx, ty);
    if (dead.length === 0) return 0;
    this.board.set(x + ',' + y, null);
    this.board.set(tx + ',' + ty, 't');
    dead.forEach((d) => this.board.set(d, null));
    const gain = dead.length - (this.hurlable(tx, ty) ? 4 : 0);
    dead.forEach((d) => this.board.set(d, 'd'));
    this.board.set(tx + ',' + ty, null);
    this.board.set(x + ',' + y, 't');
    return gain;
  }

  // Whether a dwarf could hurl onto (x, y): the first piece along some line from it is a dwarf
  // with enough dwarfs behind it (itself included) to cover the distance.
  hurlable(x, y) {
    for (const [dx, dy] of DIRECTIONS) {
      let k = 1;
      while (this.board.get(x + dx * k + ',' + (y + dy * k)) === null) k++;
      if (this.line(x + dx * k, y + dy * k, dx, dy, 'd') >= k) return true;
    }
    return false;
  }

  // How many pieces of one kind stand in a row from (x, y) on, stepping (dx, dy).
  line(x, y, dx, dy, piece) {
    let n = 0;
    while (this.board.get(x + dx * n + ',' + (y + dy * n)) === piece) n++;
    return n;
  }

  dwarfsNextTo(x, y) {
    const squares = DIRECTIONS.map(([dx, dy]) => x + dx + ',' + (y + dy));
    return squares.filter((square) => this.board.get(square) === 'd');
  }

  end_turn() {
    // declare(true) offers to end the match; it ends when both sides have declared.
  }
};
`;

/** A short, stable fingerprint of a source text (FNV-1a), to know whether it was validated. */
export function fingerprint(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0") + ":" + text.length;
}

/** The file name a client downloads as: its name, with only safe characters. */
export function fileName(name) {
  const base = String(name || "").trim().replace(/[^A-Za-z0-9_.-]+/g, "_").replace(/^[._]+/, "");
  return (base || "client").replace(/\.js$/i, "") + ".js";
}

export function cleanName(name) {
  return String(name || "").replace(/\s+/g, " ").trim().slice(0, MAX_NAME);
}

export class ClientStore {
  constructor(storage) {
    this.storage = storage;
    this.error = null; // the last storage failure, for the page to show
    this.counter = 0;
    this.reload();
  }

  /** Read what is stored (again); a first visit gets the starter client. */
  reload() {
    const selected = this.selectedId;
    this.clients = [];
    this.selectedId = null;
    this.load();
    if (!this.clients.length) this.add({ name: "my_dwarf", side: "dwarf", source: STARTER });
    if (selected && this.find(selected)) this.selectedId = selected; // this tab keeps its choice
    if (!this.selected) this.selectedId = this.clients[0].id;
  }

  load() {
    let data = null;
    try {
      data = JSON.parse(this.storage.getItem(STORAGE_KEY) || "null");
    } catch {
      data = null; // unreadable: start again rather than fail
    }
    if (!data || !Array.isArray(data.clients)) return;
    for (const item of data.clients) {
      if (!item || typeof item.source !== "string" || typeof item.id !== "string") continue;
      this.clients.push({
        id: item.id,
        name: cleanName(item.name) || "client",
        side: item.side === "troll" ? "troll" : "dwarf",
        source: item.source,
        checked: item.checked && typeof item.checked.hash === "string" ? { hash: item.checked.hash, ok: Boolean(item.checked.ok) } : undefined,
      });
    }
    this.selectedId = typeof data.selected === "string" ? data.selected : null;
  }

  /** Write everything; returns false (and keeps the reason in `error`) when the browser refuses. */
  save() {
    try {
      this.storage.setItem(STORAGE_KEY, JSON.stringify({ version: 1, selected: this.selectedId, clients: this.clients }));
      this.error = null;
      return true;
    } catch (error) {
      this.error = error;
      return false;
    }
  }

  get selected() {
    return this.clients.find((client) => client.id === this.selectedId) || null;
  }

  find(id) {
    return this.clients.find((client) => client.id === id) || null;
  }

  newId() {
    this.counter += 1;
    return `c${Date.now().toString(36)}${this.counter}`;
  }

  /** A name no other client has: "name", "name_2", "name_3"... */
  uniqueName(base, exceptId = null) {
    const taken = new Set(this.clients.filter((c) => c.id !== exceptId).map((c) => c.name));
    const name = cleanName(base) || "client";
    if (!taken.has(name)) return name;
    for (let n = 2; ; n++) {
      const candidate = `${name.slice(0, MAX_NAME - String(n).length - 1)}_${n}`;
      if (!taken.has(candidate)) return candidate;
    }
  }

  add({ name, side, source }) {
    const client = { id: this.newId(), name: this.uniqueName(name), side: side === "troll" ? "troll" : "dwarf", source };
    this.clients.push(client);
    this.selectedId = client.id;
    this.save();
    return client;
  }

  update(id, changes) {
    const client = this.find(id);
    if (!client) return null;
    Object.assign(client, changes);
    this.save();
    return client;
  }

  remove(id) {
    const index = this.clients.findIndex((client) => client.id === id);
    if (index < 0) return;
    this.clients.splice(index, 1);
    if (!this.clients.length) this.add({ name: "my_dwarf", side: "dwarf", source: STARTER });
    if (this.selectedId === id) this.selectedId = this.clients[Math.min(index, this.clients.length - 1)].id;
    this.save();
  }

  select(id) {
    if (!this.find(id)) return;
    this.selectedId = id;
    this.save();
  }
}
