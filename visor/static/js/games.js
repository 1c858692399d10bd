// What the pages know about the games: nothing of their own. The arena lists its games at
// /games/index.json (name, title, seats, score names, house players, where the game's module,
// rules page and play page are); each game's module (/games/<name>/game.js, in the game's
// package) brings its board view, labels and words, and its stylesheet (/games/<name>/game.css)
// its seats' colours. This module loads them all before any page script runs (a top-level
// await), so a page asks for a game by name and never tests one.

import { pieceOf, square } from "./words.js";

export { square };

const index = await fetch("/games/index.json").then((response) => response.json());
for (const info of index.games) {
  if (document.querySelector(`link[href="${info.style}"]`)) continue; // the game's own page links it
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = info.style;
  document.head.append(link);
}
const modules = await Promise.all(index.games.map((info) => import(info.module)));

/** Each game by name: its index entry ({name, title, seats, scores, house, rules, play}) with
 * its module's parts (View, seatLabels, logEntries...). */
export const GAMES = Object.fromEntries(index.games.map((info, i) => [info.name, { ...modules[i].default, ...info }]));

/** The games' names, in the arena's order. */
export const GAME_NAMES = index.games.map((info) => info.name);

/** The league's tables in order ({name, title, seatOf}): one per seat of a game that keeps a
 * table per seat ("Dwarf bots", seatOf the game), else one per game (its title). */
export const LEAGUE_TABLES = GAME_NAMES.flatMap((name) => {
  const info = GAMES[name];
  if (!info.tablePerSeat) return [{ name, title: info.title, seatOf: null }];
  return info.seats.map((seat) => ({ name: seat, title: `${capitalised(pieceOf(info.seatLabels[seat]))} bots`, seatOf: name }));
});

/** A game by name, or null for a name the arena does not host. */
export function gameOf(name) {
  return Object.hasOwn(GAMES, name) ? GAMES[name] : null;
}

/** The game whose score names a result's score has (an error's result does not name it). */
export function gameOfScore(score) {
  const keys = Object.keys(score || {}).sort().join();
  return GAME_NAMES.find((name) => [...GAMES[name].scores].sort().join() === keys) || null;
}

export function housePlayersFor(game, seat) {
  const info = gameOf(game);
  return info ? info.house.filter((player) => player.sides.includes(seat)) : [];
}

export function gameTitle(game) {
  const info = gameOf(game);
  return info ? info.title : String(game);
}

export function seatLabel(game, seat) {
  const info = gameOf(game);
  return (info && info.seatLabels[seat]) || String(seat);
}

/** "3 – 1" in seat order, or "" before the game starts. */
export function formatScore(game, scores) {
  const info = gameOf(game);
  if (!scores || !info) return "";
  return info.scores.map((key) => (key in scores ? scores[key] : "?")).join(" – ");
}

/** The score key of a seat (a Thud dwarf scores as "dwarfs"). */
export function scoreKey(game, seat) {
  const info = gameOf(game);
  const index = info ? info.seats.indexOf(seat) : -1;
  return index >= 0 ? info.scores[index] : seat;
}

/** A result as one sentence: "Gimli's team (team1) won: Points to win reached". */
export function describeResult(game, result, players) {
  if (!result) return "";
  if (!result.winner) return `Draw · ${result.reason}`;
  const player = (players || []).find((p) => p && p.seat === result.winner);
  const who = player ? `${player.nick} (${seatLabel(game, result.winner)})` : seatLabel(game, result.winner);
  return `${who} won · ${result.reason}`;
}

/** "ply" or "turn"; `many`: "plies" or "turns". */
export function turnWord(game, many = false) {
  const info = gameOf(game);
  if (!info) return many ? "turns" : "turn";
  return many ? info.turnsWord : info.turnWord;
}

export function capitalised(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}

/** The board view of a game on a canvas (`new View(canvas, board)`). */
export function viewOf(game, canvas, board) {
  return new GAMES[game].View(canvas, board);
}
