// An example Thud client for the trolls, in the style of the king-of-the-hill challenge: a class
// the arena plays through server/games/thud/web/thud-client.js (README.md, docs/play.md):
//
//   node server/games/thud/web/thud-client.js --side troll --file bots/js/clients/troll/hunter.js
//
// Each turn it weighs every move of every troll, as space_info() lists them: the move that
// crushes the most dwarfs, unless a line of dwarfs could hurl at the troll where it lands (a
// troll is worth four dwarfs); otherwise it closes in on the nearest dwarfs, keeping a fellow
// troll beside it, in the lines that shove.
const NEXT_TO = [[-1, -1], [0, -1], [1, -1], [-1, 0], [1, 0], [-1, 1], [0, 1], [1, 1]];

module.exports = class {
  constructor(controller, utils) {
    this.controller = controller;
    this.utils = utils;
  }

  turn() {
    const c = this.controller;
    const dwarfs = c.dwarfs();
    const trolls = new Set(c.trolls().map((t) => t.x + ',' + t.y));
    let best = null;
    for (const troll of c.trolls()) {
      const info = c.space_info(troll.x, troll.y);
      trolls.delete(troll.x + ',' + troll.y);
      for (const move of info.moves) {
        const score = this.weigh(move, dwarfs, trolls);
        if (!best || score > best.score) best = { from: troll, to: move, score: score };
      }
      trolls.add(troll.x + ',' + troll.y);
    }
    if (!best) return; // no troll can move: the game stops, scored as it stands
    c.select_space(best.from.x, best.from.y);
    c.move(best.to.x, best.to.y);
  }

  weigh(move, dwarfs, trolls) {
    let score = 10 * move.kills;
    if (move.in_danger) score -= 45; // the dwarfs could hurl at it next turn
    const friends = NEXT_TO.filter(([dx, dy]) => trolls.has(move.x + dx + ',' + (move.y + dy)));
    if (friends.length > 0) score += 2;
    // Closer to the dwarfs: the distance to the nearest one, counted in moves.
    const nearest = Math.min(
      ...dwarfs.map((d) => Math.max(Math.abs(d.x - move.x), Math.abs(d.y - move.y)))
    );
    return score - nearest;
  }

  end_turn() {}
};
