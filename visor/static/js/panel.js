// The side panel pieces shared by the watch and play pages: the scoreboard and the log.

import { el } from "./dom.js";
import { GAMES, scoreKey, seatLabel, square } from "./games.js";

const MAX_LOG = 300;

/**
 * One row per seat: colour, nick (or "free seat"), what kind of player, the score; marks the
 * seat on move and, in Thud, the sides that have declared the game over.
 */
export function renderScoreboard(list, { game, players, scores, toMove, declared, you }) {
  const info = GAMES[game];
  if (!info) return;
  const rows = info.seats.map((seat, index) => {
    const player = (players || [])[index] || null;
    const score = scores ? scores[scoreKey(game, seat)] : null;
    const badges = [];
    if (player && player.kind !== "bot") badges.push(el("span", { className: "badge", text: player.kind }));
    if (you === seat) badges.push(el("span", { className: "badge badge-you", text: "you" }));
    if (declared && declared[seat]) badges.push(el("span", { className: "badge badge-peace", text: "offers peace" }));
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

/** Log entries for a turn: Tavern hits and points; every Thud move, its kills, declarations. */
export function logEntries(game, turn, players) {
  const entries = [];
  const label = `${turn.turn}`;
  if (turn.timedOut) {
    entries.push({ kind: "timeout", turn: label, text: `${nickOf(players, turn.seat, game)} ran out of time` });
  }
  for (const event of turn.events || []) {
    if (game === "tavern") {
      if (event.type === 1) entries.push({ kind: "hit", turn: label, text: event.message });
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
  for (const event of frame.events || []) {
    if (event.type === 0) {
      const move = /^(.*) moves toward ([0-3])$/.exec(event.message || "");
      const text = move ? `${move[1]} moves ${DIRECTIONS[Number(move[2])]}` : event.message;
      entries.push({ kind: "move", turn: `${frame.turn}`, text });
    } else {
      entries.push(...logEntries(game, { turn: frame.turn, events: [event] }, players));
    }
  }
  return entries;
}
