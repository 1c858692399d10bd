// The side panel pieces shared by the watch and play pages: the scoreboard and the log.

import { el } from "./dom.js";
import { GAMES, gameOf, scoreKey, seatLabel } from "./games.js";

const MAX_TURNS_SHOWN = 2000; // past any game of the default settings (1000 turns, 500 plies)

/**
 * One row per seat: colour, nick (or "free seat"), what kind of player, the score; marks the
 * seat on move and the seats that offer to end the game (`declared`, by seat).
 */
export function renderScoreboard(list, { game, players, scores, toMove, declared, you, replies }) {
  const info = gameOf(game);
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

/** `nick(seat)` for a game's module: "Gimli (Team 1)", from these players. */
function nicks(players, game) {
  return (seat) => nickOf(players, seat, game);
}

/** A turn in one line, for a list of every turn: who played and what moved. */
export function turnSummary(game, frame, players) {
  if (frame.timedOut) return `${nickOf(players, frame.seat, game)} ran out of time`;
  return GAMES[game].turnSummary(frame, nicks(players, game));
}

/** Log entries for a turn, in the order they happened, in the game's words. */
export function logEntries(game, turn, players) {
  const entries = [];
  if (turn.timedOut) {
    entries.push({ kind: "timeout", turn: `${turn.turn}`, text: `${nickOf(players, turn.seat, game)} ran out of time` });
  }
  const info = gameOf(game);
  return info ? entries.concat(info.logEntries(turn, nicks(players, game))) : entries;
}

export function nickOf(players, seat, game) {
  const player = (players || []).find((p) => p && p.seat === seat);
  return player ? `${player.nick} (${seatLabel(game, seat)})` : seatLabel(game, seat);
}

/** Every event of one turn, in the order it happened (the replay's "this turn" list). */
export function turnEntries(game, frame, players) {
  return GAMES[game].turnEntries(frame, nicks(players, game));
}

/** What a turn scored ({seat, text}: a point, a kill), marked on a replay's seek bar, or null. */
export function markOf(game, frame, players) {
  return GAMES[game].markOf(frame, nicks(players, game));
}

/**
 * A game's facts of a position besides its turn ({id, label, text, wide}), in `list` (a <dl>):
 * each a row with the id `${id}-fact`, its value `${id}`, before `before` (or at the end).
 */
export function renderFacts(list, facts, before = null) {
  for (const row of list.querySelectorAll(".game-fact")) row.remove();
  for (const fact of facts) {
    const row = el(
      "div",
      { className: fact.wide ? "game-fact fact-wide" : "game-fact", attrs: { id: `${fact.id}-fact` } },
      el("dt", { text: fact.label }),
      el("dd", { text: fact.text, attrs: { id: fact.id } }),
    );
    list.insertBefore(row, before);
  }
}
