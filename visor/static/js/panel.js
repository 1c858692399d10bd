// The side panel pieces shared by the watch and play pages: the scoreboard and the log.

import { el } from "./dom.js";
import { GAMES, scoreKey, seatLabel, square } from "./games.js";

const MAX_LOG = 300;

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

/** Add entries at the top of a log list (newest first), keeping it bounded. */
export function prependLog(list, entries) {
  for (const entry of entries) {
    list.prepend(el("li", { className: `log-${entry.kind}` }, el("span", { className: "log-turn", text: entry.turn }), entry.text));
  }
  while (list.children.length > MAX_LOG) list.lastElementChild.remove();
}

/** "840 ms", "12.5 s". */
export function formatMs(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
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
 * Log entries for a turn: in the Tavern the turn in one line, then its points; every Thud
 * move, its kills, declarations.
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
  // Entries are prepended one by one: reverse so they read in order within the turn.
  return entries.reverse();
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
  if (game !== "tavern") return logEntries(game, frame, players).reverse();
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
