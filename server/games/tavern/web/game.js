// Dwarven Tavern on the shared pages (watch, replay, lobby, league...): its board view, its
// teams' labels, its legend and its turns in words. visor/static/js/games.js loads this module by
// the game's name (/games/index.json); it must not import games.js, which waits for it.
//
// Functions that name players get `nick(seat)`: "Gimli (Team 1)", from the page's players.

import { square } from "/static/js/words.js";
import { COLOURS, TavernView } from "./view.js";

const LABELS = { team1: "Team 1", team2: "Team 2" };
const label = (seat) => LABELS[seat] || String(seat);
const ARROWS = { north: "↑", east: "→", south: "↓", west: "←" };
const DIRECTIONS = ["north", "east", "south", "west"];

/** The direction a piece went, from the squares of an event. */
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

const movedIn = (event) => event.from && event.to && (event.from.x !== event.to.x || event.from.y !== event.to.y);

/** A turn in one line: each dwarf's step, the barrels pushed, the dwarves thrown. */
function summary(turn, nick) {
  const parts = [];
  for (const event of turn.events || []) {
    const moved = movedIn(event);
    if (event.kind === "move") {
      const ordered = DIRECTIONS[Number((/toward ([0-3])$/.exec(event.message || "") || [])[1])];
      parts.push(moved ? `${nameIn(event)} ${ARROWS[directionOf(event)]}` : `${nameIn(event)} ${ARROWS[ordered] || ""} blocked`);
    } else if (event.kind === "barrel" && moved) {
      parts.push(`pushes ${label(event.team)}'s barrel ${ARROWS[directionOf(event)]}`);
    } else if (event.kind === "thrown") {
      parts.push(`throws ${nameIn(event)}`);
    }
  }
  return `${nick(turn.seat)}: ${parts.length ? parts.join(", ") : "passes"}`;
}

/** The points of a turn (and the reset after one), as log entries. */
function points(turn, nick) {
  const entries = [];
  for (const event of turn.events || []) {
    if (event.type === 3) {
      const point = /^Point for (team[12])$/.exec(event.message || "");
      const text = point ? `Point for ${nick(point[1])}` : event.message;
      entries.push({ kind: point ? "point" : "reset", turn: `${turn.turn}`, text });
    }
  }
  return entries;
}

export default {
  seatLabels: LABELS,
  colours: COLOURS,
  accent: "#4f8fc0", // the game's colour in charts
  turnWord: "turn",
  turnsWord: "turns",
  logTitle: "Hits and points",
  View: TavernView,
  ringsHover: true, // the view rings the square under the pointer
  // The house players a lobby's "run a game" form seats first, by seat.
  runDefaults: ["pusher", "wanderer"],

  /** What stands on a square, a line each, or null where nothing does. */
  describeSquare({ view, state }, at, nick) {
    const piece = view.pieceAt(state, at);
    if (!piece) return null;
    if (piece.kind === "barrel") return [`Barrel of ${label(piece.team)}`, nick(piece.team), square(at)];
    return [piece.dwarf.name, `#${piece.dwarf.id} · ${nick(piece.team)}`, square(at)];
  },

  /** How far a live game is, for its turns fact. */
  progress(frame, board) {
    return frame.turn === undefined ? "–" : `${frame.turn} of ${board.turnLimit}`;
  },

  toMove: () => null, // the clock says who is awaited
  declared: () => null,

  /** The facts of a position besides its turn: [{id, label, text, wide}]. */
  facts(state, board) {
    return board.pointsToWin === undefined ? [] : [{ id: "goal", label: "Points to win", text: `${board.pointsToWin}` }];
  },

  /** Who scores where, under a live board: {title, rows: [{seat, text}], note}. */
  legend(board) {
    const bottom = board.height - 1;
    return {
      title: "Who scores where",
      rows: [
        { seat: "team1", text: `Team 1 (red) scores by pushing Team 2's barrel (yellow hoops) onto row ${bottom}, the red row at the bottom.` },
        { seat: "team2", text: "Team 2 (yellow) scores by pushing Team 1's barrel (red hoops) onto row 0, the yellow row at the top." },
      ],
      note: "Arrows: the last turn. A dwarf's step in a light tint of its team's colour, a pushed barrel in white, a thrown dwarf dashed red.",
    };
  },

  joinFields: () => ({}), // seats go by join order

  /** A live log's entries: the turn in one line, then its points. */
  logEntries(turn, nick) {
    const entries = [];
    if (turn.seat) {
      const thrown = (turn.events || []).some((event) => event.kind === "thrown");
      entries.push({ kind: thrown ? "hit" : "move", turn: `${turn.turn}`, text: summary(turn, nick) });
    }
    return entries.concat(points(turn, nick));
  },

  /** Every event of a turn (a replay's "this turn"): each dwarf's and barrel's move, the points. */
  turnEntries(frame, nick) {
    const entries = [];
    const turn = `${frame.turn}`;
    for (const event of frame.events || []) {
      const moved = movedIn(event);
      if (event.kind === "move") {
        const move = /^(.*) moves toward ([0-3])$/.exec(event.message || "");
        const text = move ? `${move[1]} moves ${DIRECTIONS[Number(move[2])]}${moved ? "" : ", blocked"}` : event.message;
        entries.push({ kind: "move", turn, text });
      } else if (event.kind === "barrel") {
        const where = moved ? `rolls ${directionOf(event)} to ${square([event.to.x, event.to.y])}` : "does not budge";
        entries.push({ kind: "move", turn, text: `${label(event.team)}'s barrel ${where}` });
      } else if (event.kind === "thrown") {
        const where = moved ? `to ${square([event.to.x, event.to.y])}` : "but lands where it stood";
        entries.push({ kind: "hit", turn, text: `${nameIn(event)} is thrown ${where}` });
      } else {
        entries.push(...points({ turn: frame.turn, events: [event] }, nick));
      }
    }
    return entries;
  },

  turnSummary: summary,

  /** What a turn scored, marked on a replay's seek bar ({seat, text}), or null. */
  markOf(frame, nick) {
    const point = (frame.events || []).find((event) => event.kind === "point");
    return point ? { seat: point.team, text: `Point for ${nick(point.team)}` } : null;
  },

  /** Shell commands that seat the house players in a simulation, and what to do with them. */
  houseCommands(where) {
    return [`tavern house tavern pusher ${where}`];
  },
  houseHint: "run it twice for a whole game, or once against your bot",
};
