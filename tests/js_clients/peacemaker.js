// Plays like killer, and declares the game over after every move, from end_turn(). It reports
// on stderr whether the other side has declared.
module.exports = class {
  constructor(controller, utils) {
    this.controller = controller;
    this.utils = utils;
  }

  turn() {
    console.log('ply ' + this.controller.turn() + ' opponent_declared ' + this.controller.opponent_declared());
    var killing_moves = this.controller.killing_moves();
    var from, to;
    if (killing_moves.length > 0) {
      from = killing_moves[0].from;
      to = killing_moves[0].to;
    } else {
      var pieces = this.controller.pieces();
      for (var i = 0; i < pieces.length && !to; i++) {
        var moves = this.controller.space_info(pieces[i].x, pieces[i].y).moves;
        if (moves.length > 0) {
          from = pieces[i];
          to = moves[0];
        }
      }
    }
    this.controller.select_space(from.x, from.y);
    this.controller.move(to.x, to.y);
  }

  end_turn() {
    this.controller.declare(true);
  }
};
