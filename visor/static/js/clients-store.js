// The /clients page's shelf: a person's Thud clients, kept in this browser's localStorage.
//
// One key holds everything: {version: 1, selected: id, clients: [{id, name, side, source,
// checked: {hash, ok} | undefined}]}. Nothing leaves the browser unless the person downloads a
// client or plays it.

export const STORAGE_KEY = "visor.clients";
const MAX_NAME = 64;

// Offered for every new client: plays either side, passes validation, and shows the controller's
// main calls. (No forbidden term may appear in it, comments included.) As the dwarfs it beats the
// house random player and takes trolls from the house troll; as the trolls it beats both house
// players of the dwarfs (measured: docs/tournaments.md, "The /clients page").
export const STARTER = `// A Thud client in the style of the king-of-the-hill challenge.
// The arena calls turn() on each of your turns and end_turn() right after your move.
module.exports = class {
  constructor(controller, utils) {
    this.controller = controller; // your only way to look at the board and to move
    this.utils = utils; // distance_between, closest_to, farthest_from
  }

  turn() {
    const c = this.controller;
    // Kill when you can: killing_moves() lists {from, to, kills} for your pieces.
    const kills = c.killing_moves();
    if (kills.length > 0) {
      const best = kills.reduce((a, b) => (b.kills > a.kills ? b : a));
      c.select_space(best.from.x, best.from.y);
      c.move(best.to.x, best.to.y);
      return;
    }
    // Otherwise weigh every move of every piece and play the best one.
    const mine = c.pieces();
    const dwarfs = c.space_info(mine[0].x, mine[0].y).piece === 'd';
    const rivals = dwarfs ? c.trolls() : c.dwarfs();
    // space_info(x, y) gives the moves of any piece, with how many pieces each would kill now:
    // the rival's moves are what it could take next.
    const replies = [];
    for (const r of rivals) replies.push(...c.space_info(r.x, r.y).moves);
    this.friends = new Set(mine.map((p) => p.x + ',' + p.y));
    this.rivals = new Set(rivals.map((p) => p.x + ',' + p.y));
    this.squares = new Set(c.spaces().map((s) => s.x + ',' + s.y));
    let best = null;
    for (const piece of mine) {
      const info = c.space_info(piece.x, piece.y);
      for (const move of info.moves) {
        const score = this.weigh(piece, move, info.in_danger, rivals, replies, dwarfs);
        if (!best || score > best.score) best = { piece: piece, move: move, score: score };
      }
    }
    // select_space picks the piece, move sends it (one move per turn).
    c.select_space(best.piece.x, best.piece.y);
    c.move(best.move.x, best.move.y);
  }

  weigh(piece, move, threatened, rivals, replies, dwarfs) {
    const distance = (a, b) => Math.max(Math.abs(a.x - b.x), Math.abs(a.y - b.y));
    let score = 0;
    if (move.in_danger) score -= 40; // a square the other side could strike next turn
    if (threatened) score += 30; // a piece in danger where it stands: get it out
    // The most the other side could kill in reply, once this piece has moved.
    let worst = 0;
    for (const r of replies) {
      if (r.x === move.x && r.y === move.y) continue;
      const left = distance(r, piece) === 1 ? 1 : 0;
      const arrived = distance(r, move) === 1 ? 1 : 0;
      worst = Math.max(worst, r.kills - left + arrived);
    }
    score -= 25 * worst;
    // Dwarfs: a line of dwarfs behind a safe square threatens the trolls in its reach.
    if (dwarfs && !move.in_danger) score += 12 * this.hurls(piece, move);
    // Stay together: dwarfs hurl along their lines, trolls shove along theirs.
    for (const key of this.friends) {
      const [x, y] = key.split(',').map(Number);
      const other = x !== piece.x || y !== piece.y;
      if (other && distance({ x: x, y: y }, move) === 1) score += dwarfs ? 1 : 2;
    }
    // Trolls close in on the dwarfs; dwarfs keep out of a troll's reach.
    let closest = 99;
    for (const r of rivals) closest = Math.min(closest, distance(r, move));
    score -= dwarfs ? 5 * Math.max(0, 3 - closest) : closest;
    return score;
  }

  // How many trolls a dwarf on \`move\` could hurl at next turn: along each line of dwarfs
  // behind it, as far as the line is long, over empty squares.
  hurls(piece, move) {
    const at = (x, y) => x + ',' + y;
    const from = at(piece.x, piece.y);
    let threats = 0;
    for (let dx = -1; dx <= 1; dx++) {
      for (let dy = -1; dy <= 1; dy++) {
        if (!dx && !dy) continue;
        let line = 1; // this dwarf and those right behind it (not the one that leaves)
        for (;;) {
          const behind = at(move.x - dx * line, move.y - dy * line);
          if (behind === from || !this.friends.has(behind)) break;
          line++;
        }
        for (let d = 1; d <= line; d++) {
          const square = at(move.x + dx * d, move.y + dy * d);
          if (this.rivals.has(square)) {
            threats++;
            break;
          }
          if (!this.squares.has(square) || this.friends.has(square)) break;
        }
      }
    }
    return threats;
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
