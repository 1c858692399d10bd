// The side panel pieces shared by the watch and play pages: the scoreboard and the log.

import { el } from "./dom.js";
import { GAMES, scoreKey, seatLabel, square } from "./games.js";

const MAX_TURNS_SHOWN = 2000; // past any game of the default settings (1000 turns, 500 plies)

/**
 * One row per seat: colour, nick (or "free seat"), what kind of player, the score; marks the
 * seat on move and, in Thud, the sides that have declared the game over.
 */
export function renderScoreboard(list, { game, players, scores, toMove, declared, you, replies }) {
  const info = GAMES[game];
  if (!info) return;
  const rows = info.seats.map((seat, index) => {
    const player = (players || [])[index] || null;
    const score = scores ? scores[scoreKey(game, seat)] : null;
    const badges = [];
    if (player && player.kind !== "bot") badges.push(el("span", { className: "badge", text: player.kind }));
    if (you === seat) badges.push(el("span", { className: "badge badge-you", text: "you" }));
    if (declared && declared[seat]) badges.push(el("span", { className: "badge badge-peace", text: "offers peace" }));
    const reply = replies && replies[seat];
    if (reply !== undefined && reply !== null) {
      badges.push(el("span", { className: "seat-reply", text: `last reply ${formatMs(reply)}` }));
    }
    return el(
      "li",
      { className: `seat seat-${seat}${toMove === seat ? " on-move" : ""}`, dataset: { seat } },
      el("span", { className: "swatch", attrs: { "aria-hidden": "true" } }),
      el(
        "span",
        { className: "seat-who" },
        el("span", { className: "seat-label", text: seatLabel(game, seat) }),
        el("span", { className: player ? "nick" : "nick free", text: player ? player.nick : "free seat" }),
        ...badges,
      ),
      el("span", { className: "seat-score", text: score === null || score === undefined ? "–" : score }),
    );
  });
  list.replaceChildren(...rows);
}

function logItem(entry) {
  return el("li", { className: `log-${entry.kind}` }, el("span", { className: "log-turn", text: entry.turn }), entry.text);
}

/**
 * A game's move list, newest first, within a turn too: a game's last line ("Game over") is the
 * top one. Each turn is shown once, in its place, whatever order the turns come in: a late
 * watcher's earlier turns (`fill`) arrive after the live ones. The latest MAX_TURNS_SHOWN
 * turns are kept.
 */
export class MoveList {
  constructor(list) {
    this.list = list;
    this.turns = new Map(); // turn -> its items, in the order they happened
    this.newest = 0;
    this.complete = 0; // every turn from the oldest kept to this one is in
  }

  clear() {
    this.turns.clear();
    this.newest = 0;
    this.complete = 0;
    this.list.replaceChildren();
  }

  /** A turn's entries, in the order they happened; a turn shown already stays as it is. */
  add(turn, entries) {
    if (this.turns.has(turn)) return;
    const items = entries.map(logItem);
    this.turns.set(turn, items);
    if (turn >= this.newest) {
      this.newest = turn;
      for (const item of items) this.list.prepend(item);
      this.trim();
    } else {
      this.render();
    }
  }

  /** What happened between turns (a player left, a notice): above the newest turn. */
  note(entry) {
    const item = logItem(entry);
    const items = this.turns.get(this.newest) || [];
    items.push(item);
    this.turns.set(this.newest, items);
    this.list.prepend(item);
  }

  /** Earlier turns, [{turn, entries}]: those not shown yet join the list, in their places. */
  fill(turns) {
    for (const { turn, entries } of turns) {
      if (!this.turns.has(turn)) this.turns.set(turn, entries.map(logItem));
      this.newest = Math.max(this.newest, turn);
    }
    this.trim();
    this.render();
  }

  /** The oldest turn up to `upTo` that the list lacks, or null when it has them all. */
  firstMissing(upTo) {
    this.complete = Math.max(this.complete, this.oldestKept() - 1);
    while (this.complete < upTo && this.turns.has(this.complete + 1)) this.complete += 1;
    return this.complete < upTo ? this.complete + 1 : null;
  }

  oldestKept() {
    return Math.max(1, this.newest - MAX_TURNS_SHOWN + 1);
  }

  trim() {
    if (this.turns.size <= MAX_TURNS_SHOWN) return;
    const oldest = this.oldestKept();
    for (const [turn, items] of this.turns) {
      if (turn > 0 && turn < oldest) {
        for (const item of items) item.remove();
        this.turns.delete(turn);
      }
    }
  }

  render() {
    const turns = [...this.turns.keys()].sort((a, b) => b - a);
    this.list.replaceChildren(...turns.flatMap((turn) => [...this.turns.get(turn)].reverse()));
  }
}

/** "840 ms", "12.5 s". */
export function formatMs(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

/** A chess clock's time: minutes and seconds, with tenths in the last ten seconds. */
export function formatClock(ms) {
  const tenths = Math.max(0, Math.floor(ms / 100));
  const seconds = Math.floor(tenths / 10);
  const minutes = Math.floor(seconds / 60);
  const text = `${minutes}:${String(seconds % 60).padStart(2, "0")}`;
  return ms < 10_000 ? `${text}.${tenths % 10}` : text;
}

/**
 * Both clocks of a game created with a time bank, from the server's `clock` (`remainingMs` by
 * seat as the turn began, `seat` on move), `elapsedMs` after it began: one line per seat, the
 * seat on move counting down. Returns the time left of the seat on move.
 */
export function renderBankClocks(container, clock, elapsedMs, players, game) {
  const running = Math.max(0, clock.remainingMs[clock.seat] - elapsedMs);
  const increment = clock.incrementMs ? ` (+${formatMs(clock.incrementMs)} a move)` : "";
  container.replaceChildren(
    ...Object.entries(clock.remainingMs).map(([seat, ms]) => {
      const onMove = seat === clock.seat;
      return el("span", {
        className: onMove ? "bank-clock bank-clock-running" : "bank-clock",
        text: `${nickOf(players, seat, game)} ${formatClock(onMove ? running : ms)}${onMove ? " ◂" : ""}`,
        dataset: { seat },
      });
    }),
    el("span", { className: "bank-clock-increment", text: increment }),
  );
  return running;
}

const ARROWS = { north: "↑", east: "→", south: "↓", west: "←" };

/** The direction a piece went, from the squares of a Tavern event. */
function directionOf(event) {
  const dx = event.to.x - event.from.x;
  const dy = event.to.y - event.from.y;
  if (Math.abs(dy) >= Math.abs(dx)) return dy < 0 ? "north" : "south";
  return dx < 0 ? "west" : "east";
}

/** The dwarf's name an original event text starts with ("Durin moves toward 0"). */
function nameIn(event) {
  const name = /^(.*) (?:moves toward [0-3]|was hit!!)$/.exec(event.message || "");
  return name ? name[1] : `dwarf ${event.dwarf}`;
}

/** A Tavern turn in one line: each dwarf's step, the barrels pushed, the dwarves thrown. */
function tavernSummary(turn, players) {
  const parts = [];
  for (const event of turn.events || []) {
    const moved = event.from && event.to && (event.from.x !== event.to.x || event.from.y !== event.to.y);
    if (event.kind === "move") {
      const ordered = DIRECTIONS[Number((/toward ([0-3])$/.exec(event.message || "") || [])[1])];
      parts.push(moved ? `${nameIn(event)} ${ARROWS[directionOf(event)]}` : `${nameIn(event)} ${ARROWS[ordered] || ""} blocked`);
    } else if (event.kind === "barrel" && moved) {
      parts.push(`pushes ${seatLabel("tavern", event.team)}'s barrel ${ARROWS[directionOf(event)]}`);
    } else if (event.kind === "thrown") {
      parts.push(`throws ${nameIn(event)}`);
    }
  }
  const who = nickOf(players, turn.seat, "tavern");
  return `${who}: ${parts.length ? parts.join(", ") : "passes"}`;
}

/** A turn in one line, for a list of every turn: who played and what moved. */
export function turnSummary(game, frame, players) {
  if (frame.timedOut) return `${nickOf(players, frame.seat, game)} ran out of time`;
  if (game === "tavern") return tavernSummary(frame, players);
  const parts = [];
  for (const event of frame.events || []) {
    if (event.type === "move") {
      const kills = event.killed && event.killed.length ? ` kills ${event.killed.length}` : "";
      parts.push(`${seatLabel(game, event.side)}: ${square(event.from)} → ${square(event.to)} ${event.kind}${kills}`);
    } else if (event.type === "declared") {
      parts.push(event.value ? "offers peace" : "withdraws the offer of peace");
    } else if (event.type === "ended") {
      parts.push(`game over: ${event.reason}`);
    }
  }
  return parts.join(" · ") || `${nickOf(players, frame.seat, game)} played`;
}

/**
 * Log entries for a turn, in the order they happened: in the Tavern the turn in one line, then
 * its points; every Thud move, its kills, declarations, the end.
 */
export function logEntries(game, turn, players) {
  const entries = [];
  const label = `${turn.turn}`;
  if (turn.timedOut) {
    entries.push({ kind: "timeout", turn: label, text: `${nickOf(players, turn.seat, game)} ran out of time` });
  } else if (game === "tavern" && turn.seat) {
    const thrown = (turn.events || []).some((event) => event.kind === "thrown");
    entries.push({ kind: thrown ? "hit" : "move", turn: label, text: tavernSummary(turn, players) });
  }
  for (const event of turn.events || []) {
    if (game === "tavern") {
      if (event.type === 3) {
        const point = /^Point for (team[12])$/.exec(event.message || "");
        const text = point ? `Point for ${nickOf(players, point[1], game)}` : event.message;
        entries.push({ kind: point ? "point" : "reset", turn: label, text });
      }
    } else if (event.type === "move") {
      const kills = event.killed && event.killed.length ? ` · kills ${event.killed.length}` : "";
      const text = `${seatLabel(game, event.side)}: ${square(event.from)} → ${square(event.to)} ${event.kind}${kills}`;
      entries.push({ kind: kills ? "hit" : "move", turn: label, text });
    } else if (event.type === "declared") {
      const text = event.value ? `${seatLabel(game, event.side)} offer peace` : `${seatLabel(game, event.side)} withdraw their offer of peace`;
      entries.push({ kind: "point", turn: label, text });
    } else if (event.type === "ended") {
      entries.push({ kind: "point", turn: label, text: `Game over: ${event.reason}` });
    }
  }
  return entries;
}

export function nickOf(players, seat, game) {
  const player = (players || []).find((p) => p && p.seat === seat);
  return player ? `${player.nick} (${seatLabel(game, seat)})` : seatLabel(game, seat);
}

const DIRECTIONS = ["north", "east", "south", "west"];

/**
 * Every event of one turn, in the order it happened (the replay's "this turn" list): the
 * live log's entries, and in the Tavern each dwarf's and barrel's move as well.
 */
export function turnEntries(game, frame, players) {
  if (game !== "tavern") return logEntries(game, frame, players);
  const entries = [];
  const turn = `${frame.turn}`;
  for (const event of frame.events || []) {
    const moved = event.from && event.to && (event.from.x !== event.to.x || event.from.y !== event.to.y);
    if (event.kind === "move") {
      const move = /^(.*) moves toward ([0-3])$/.exec(event.message || "");
      const text = move ? `${move[1]} moves ${DIRECTIONS[Number(move[2])]}${moved ? "" : ", blocked"}` : event.message;
      entries.push({ kind: "move", turn, text });
    } else if (event.kind === "barrel") {
      const where = moved ? `rolls ${directionOf(event)} to ${square([event.to.x, event.to.y])}` : "does not budge";
      entries.push({ kind: "move", turn, text: `${seatLabel(game, event.team)}'s barrel ${where}` });
    } else if (event.kind === "thrown") {
      const where = moved ? `to ${square([event.to.x, event.to.y])}` : "but lands where it stood";
      entries.push({ kind: "hit", turn, text: `${nameIn(event)} is thrown ${where}` });
    } else {
      entries.push(...logEntries(game, { turn: frame.turn, events: [event] }, players));
    }
  }
  return entries;
}
