// The /clients page's shelf: a person's Thud clients, kept in this browser's localStorage.
//
// One key holds everything: {version: 1, selected: id, clients: [{id, name, side, source,
// checked: {hash, ok} | undefined}]}. Nothing leaves the browser unless the person downloads a
// client or plays it.

export const STORAGE_KEY = "visor.clients";
const MAX_NAME = 64;

// Offered for every new client: plays either side, passes validation, and shows the controller's
// main calls. (No forbidden term may appear in it, comments included.)
export const STARTER = `// A Thud client in the style of the king-of-the-hill challenge.
// The arena calls turn() on each of your turns and end_turn() right after your move.
module.exports = class {
  constructor(controller, utils) {
    this.controller = controller; // your only way to look at the board and to move
    this.utils = utils; // distance_between, closest_to, farthest_from
  }

  turn() {
    // Kill when you can: killing_moves() lists {from, to, kills} for your pieces.
    const kills = this.controller.killing_moves();
    if (kills.length > 0) {
      const best = kills.reduce((a, b) => (b.kills > a.kills ? b : a));
      this.controller.select_space(best.from.x, best.from.y);
      this.controller.move(best.to.x, best.to.y);
      return;
    }
    // Otherwise step where no opponent can strike back next turn, if any piece can.
    let choice = null;
    for (const piece of this.controller.pieces()) {
      const info = this.controller.space_info(piece.x, piece.y);
      if (info.safe_moves.length > 0) {
        choice = { piece: piece, move: info.safe_moves[0] };
        break;
      }
      if (!choice && info.moves.length > 0) choice = { piece: piece, move: info.moves[0] };
    }
    // select_space picks the piece, move sends it (one move per turn).
    this.controller.select_space(choice.piece.x, choice.piece.y);
    this.controller.move(choice.move.x, choice.move.y);
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
