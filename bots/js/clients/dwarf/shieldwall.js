// An example Thud client for the dwarfs, in the style of the king-of-the-hill challenge: a class
// the arena plays through server/games/thud/web/thud-client.js (README.md, docs/play.md):
//
//   node server/games/thud/web/thud-client.js --side dwarf --file bots/js/clients/dwarf/shieldwall.js
//
// Each turn it weighs every move of every dwarf, as space_info() lists them: a hurl that kills
// a troll first (a troll is worth four dwarfs), then moves that leave no dwarf where a troll can
// reach it, then moves that keep the dwarfs shoulder to shoulder (the lines that hurl) and close
// enough to the trolls to threaten them.
const NEXT_TO = [[-1, -1], [0, -1], [1, -1], [-1, 0], [1, 0], [-1, 1], [0, 1], [1, 1]];

module.exports = class {
  constructor(controller, utils) {
    this.controller = controller;
    this.utils = utils;
  }

  turn() {
    const c = this.controller;
    const trolls = c.trolls();
    const dwarfs = new Set(c.dwarfs().map((d) => d.x + ',' + d.y));
    let best = null;
    for (const dwarf of c.dwarfs()) {
      const info = c.space_info(dwarf.x, dwarf.y);
      dwarfs.delete(dwarf.x + ',' + dwarf.y); // its own square is empty once it moves
      for (const move of info.moves) {
        const score = this.weigh(info, move, dwarfs, trolls);
        if (!best || score > best.score) best = { from: dwarf, to: move, score: score };
      }
      dwarfs.add(dwarf.x + ',' + dwarf.y);
    }
    if (!best) return; // no dwarf can move: the game stops, scored as it stands
    c.select_space(best.from.x, best.from.y);
    c.move(best.to.x, best.to.y);
  }

  weigh(info, move, dwarfs, trolls) {
    let score = 100 * move.kills;
    if (move.in_danger) score -= 60; // a troll could land next to it next turn
    if (info.in_danger && !move.in_danger) score += 30; // out of a troll's reach
    const friends = NEXT_TO.filter(([dx, dy]) => dwarfs.has(move.x + dx + ',' + (move.y + dy)));
    score += 4 * Math.min(friends.length, 3);
    // Near enough to threaten, in lines: the distance to the nearest troll, counted in moves.
    const nearest = Math.min(
      ...trolls.map((t) => Math.max(Math.abs(t.x - move.x), Math.abs(t.y - move.y)))
    );
    return score - nearest;
  }

  end_turn() {}
};
