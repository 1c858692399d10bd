// What the pages know about the two games: seat names, colours, house players, formatting.

/**
 * The arena's house players (mirrors bots/house.py HOUSE_PLAYERS; the server validates every
 * request anyway, so a stale list only means a clear error message).
 */
export const HOUSE_PLAYERS = {
  tavern: [
    { name: "pusher", sides: ["team1", "team2"], description: "pushes the rival barrel home, guards its own" },
    { name: "wanderer", sides: ["team1", "team2"], description: "every dwarf steps at random" },
  ],
  thud: [
    { name: "dwarf", sides: ["dwarf"], description: "hurls at trolls, keeps out of reach, forms lines" },
    { name: "troll", sides: ["troll"], description: "kills the most dwarfs, avoids hurls, stays together" },
    { name: "random", sides: ["dwarf", "troll"], description: "a uniformly random legal move" },
  ],
};

export const GAMES = {
  tavern: { title: "Dwarven Tavern", seats: ["team1", "team2"], seatLabels: ["Team 1", "Team 2"] },
  thud: { title: "Thud", seats: ["dwarf", "troll"], seatLabels: ["Dwarfs", "Trolls"] },
};

/** Seat colours; the CSS uses the same values through classes named after the seat. */
export const COLOURS = {
  team1: "#d9573b", // red, like the original's bottom strip
  team2: "#e8b63c", // yellow, the top strip
  dwarf: "#4a86e0", // blue, as in the Thud challenge
  troll: "#5aa845", // green
};

export function housePlayersFor(game, seat) {
  return (HOUSE_PLAYERS[game] || []).filter((player) => player.sides.includes(seat));
}

export function gameTitle(game) {
  return (GAMES[game] && GAMES[game].title) || String(game);
}

export function seatLabel(game, seat) {
  const info = GAMES[game];
  const index = info ? info.seats.indexOf(seat) : -1;
  return index >= 0 ? info.seatLabels[index] : String(seat);
}

/** "3 – 1" in seat order, or "" before the game starts. */
export function formatScore(game, scores) {
  if (!scores) return "";
  const keys = game === "thud" ? ["dwarfs", "trolls"] : ["team1", "team2"];
  return keys.map((key) => (key in scores ? scores[key] : "?")).join(" – ");
}

/** The score key of a seat ("dwarf" scores as "dwarfs"). */
export function scoreKey(game, seat) {
  if (game === "thud") return seat === "dwarf" ? "dwarfs" : "trolls";
  return seat;
}

/** A result as one sentence: "Gimli's team (team1) won: Points to win reached". */
export function describeResult(game, result, players) {
  if (!result) return "";
  if (!result.winner) return `Draw · ${result.reason}`;
  const player = (players || []).find((p) => p && p.seat === result.winner);
  const who = player ? `${player.nick} (${seatLabel(game, result.winner)})` : seatLabel(game, result.winner);
  return `${who} won · ${result.reason}`;
}

export function square(coords) {
  return `[${coords[0]}, ${coords[1]}]`;
}
