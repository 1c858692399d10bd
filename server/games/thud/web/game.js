// Thud on the shared pages (watch, replay, lobby, league...): its board view, its seats' labels,
// its facts and its moves in words. visor/static/js/games.js loads this module by the game's
// name (/games/index.json); it must not import games.js, which waits for it.
//
// Functions that name players get `nick(seat)`: "Grag (Trolls)", from the page's players.

import { square } from "/static/js/words.js";
import { COLOURS, ThudView } from "./view.js";

const LABELS = { dwarf: "Dwarfs", troll: "Trolls" };
const label = (seat) => LABELS[seat] || String(seat);

function moveText(event, kills) {
  return `${label(event.side)}: ${square(event.from)} → ${square(event.to)} ${event.kind}${kills}`;
}

/** The sides that offer peace in a position, by their labels ("nobody"). */
function offering(state) {
  const declared = Object.keys(state.declared || {}).filter((side) => state.declared[side]);
  return declared.length ? declared.map(label).join(" and ") : "nobody";
}

function logEntries(turn) {
  const entries = [];
  const at = `${turn.turn}`;
  for (const event of turn.events || []) {
    if (event.type === "move") {
      const kills = event.killed && event.killed.length ? ` · kills ${event.killed.length}` : "";
      entries.push({ kind: kills ? "hit" : "move", turn: at, text: moveText(event, kills) });
    } else if (event.type === "declared") {
      const text = event.value ? `${label(event.side)} offer peace` : `${label(event.side)} withdraw their offer of peace`;
      entries.push({ kind: "point", turn: at, text });
    } else if (event.type === "ended") {
      entries.push({ kind: "point", turn: at, text: `Game over: ${event.reason}` });
    }
  }
  return entries;
}

export default {
  seatLabels: LABELS,
  colours: COLOURS,
  accent: "#c8892b", // the game's colour in charts
  turnWord: "ply",
  turnsWord: "plies",
  logTitle: "Moves",
  View: ThudView,
  ringsHover: false,
  // The house players a lobby's "run a game" form seats first, by seat.
  runDefaults: ["dwarf", "troll"],

  /** What stands on a square, a line each, or null off the board. */
  describeSquare({ view, state, board }, at) {
    if (!view.isSquare(at)) return null;
    const has = (list) => (list || []).some((s) => s[0] === at[0] && s[1] === at[1]);
    let what = "Empty square";
    if (state && has(state.dwarfs)) what = "Dwarf";
    else if (state && has(state.trolls)) what = "Troll";
    else if (at[0] === board.thudstone[0] && at[1] === board.thudstone[1]) what = "The Thudstone";
    return [what, square(at)];
  },

  /** How far a live game is, for its turns fact. */
  progress(frame, board) {
    const state = frame.state;
    return state ? `${Math.max(0, state.ply - 1)} of ${board.maxPlies}` : "–";
  },

  toMove: (state) => (state ? state.side : null),
  declared: (state) => (state ? state.declared : null),

  /** The facts of a position besides its turn: [{id, label, text, wide}]. */
  facts(state) {
    return [
      { id: "peace", label: "Peace offered by", text: state ? offering(state) : "nobody" },
      { id: "pieces", label: "On the board", text: state ? `${state.dwarfs.length} dwarfs · ${state.trolls.length} trolls` : "–", wide: true },
    ];
  },

  legend: () => null,

  /** A join line's fields besides the game's: the free side. */
  joinFields(players) {
    return { side: (players || []).findIndex((p) => !p) === 1 ? "troll" : "dwarf" };
  },

  logEntries,
  turnEntries: logEntries,

  /** A turn in one line, for the list of every turn. */
  turnSummary(frame, nick) {
    const parts = [];
    for (const event of frame.events || []) {
      if (event.type === "move") {
        parts.push(moveText(event, event.killed && event.killed.length ? ` kills ${event.killed.length}` : ""));
      } else if (event.type === "declared") {
        parts.push(event.value ? "offers peace" : "withdraws the offer of peace");
      } else if (event.type === "ended") {
        parts.push(`game over: ${event.reason}`);
      }
    }
    return parts.join(" · ") || `${nick(frame.seat)} played`;
  },

  /** What a turn scored, marked on a replay's seek bar ({seat, text}), or null. */
  markOf(frame) {
    for (const event of frame.events || []) {
      if (event.type === "move" && event.killed && event.killed.length) {
        const n = event.killed.length;
        const victims = event.side === "dwarf" ? (n === 1 ? "troll" : "trolls") : n === 1 ? "dwarf" : "dwarfs";
        return { seat: event.side, text: `${label(event.side)} kill ${n} ${victims}` };
      }
    }
    return null;
  },

  /** Shell commands that seat the house players in a simulation, and what to do with them. */
  houseCommands(where) {
    return [`tavern house thud dwarf --side dwarf ${where}`, `tavern house thud troll --side troll ${where}`];
  },
  houseHint: "one for each side; keep one against your bot",
};
