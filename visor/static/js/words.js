// Words every game's module and page writes alike. It imports nothing: the games' modules
// (loaded by games.js) use it, and must not import games.js, which waits for them.

/** A square as "[x, y]". */
export function square(coords) {
  return `[${coords[0]}, ${coords[1]}]`;
}

/** "Team 1" -> "Team 1", "Dwarfs" -> "dwarf": one piece of a side, in a sentence. */
export function pieceOf(label) {
  return label.replace(/s$/, "").toLowerCase();
}
