// Kills when it can do so safely; otherwise moves the piece nearest an opponent, by a safe move
// if it has one, towards that opponent. Written as a bare class, without module.exports.
class Cautious {
  constructor(controller, utils) {
    this.controller = controller;
    this.utils = utils;
  }

  opponent(info) {
    return this.controller.side == 'd' ? info.nearest_troll : info.nearest_dwarf;
  }

  turn() {
    var infos = this.controller.pieces().map((piece) => this.controller.space_info(piece.x, piece.y));
    for (var info of infos) {
      var kill = info.safe_moves.find((move) => move.kills > 0);
      if (kill) {
        this.controller.select_space(info.x, info.y);
        this.controller.move(kill.x, kill.y);
        return;
      }
    }
    var movable = infos.filter((info) => info.moves.length > 0);
    var nearest = movable[0];
    movable.forEach((info) => {
      if (this.opponent(info).distance < this.opponent(nearest).distance) nearest = info;
    });
    var choices = nearest.safe_moves.length > 0 ? nearest.safe_moves : nearest.moves;
    var target = this.opponent(nearest).pieces[0] || { x: 7, y: 7 };
    var move = this.utils.closest_to(choices, target);
    this.controller.select_space(nearest.x, nearest.y);
    this.controller.move(move.x, move.y);
  }

  end_turn() {
  }
}
