// Plays two moves, then throws on its third turn.
module.exports = class {
  constructor(controller, utils) {
    this.controller = controller;
    this.turns = 0;
  }

  turn() {
    this.turns += 1;
    if (this.turns == 3) {
      throw new Error('thrower gives up on its third turn');
    }
    var piece = this.controller.pieces().find(
      (p) => this.controller.space_info(p.x, p.y).moves.length > 0
    );
    var moves = this.controller.check_space(piece.x, piece.y).moves;
    this.controller.select_space(piece.x, piece.y);
    this.controller.move(moves[0].x, moves[0].y);
  }

  end_turn() {
  }
};
