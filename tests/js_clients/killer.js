// Takes the first killing move there is; otherwise the first move of the first piece that can
// move. Plays either side. (A test client in the challenge's style.)
module.exports = class {
  constructor(controller, utils) {
    this.controller = controller;
    this.side = controller.side;
    this.utils = utils;
  }

  turn() {
    var killing_moves = this.controller.killing_moves();
    if (killing_moves.length > 0) {
      this.controller.select_space(killing_moves[0].from.x, killing_moves[0].from.y);
      this.controller.move(killing_moves[0].to.x, killing_moves[0].to.y);
      return;
    }
    var pieces = this.controller.pieces();
    for (var i = 0; i < pieces.length; i++) {
      var space = this.controller.check_space(pieces[i].x, pieces[i].y);
      if (space && space.moves.length > 0) {
        this.controller.select_space(pieces[i].x, pieces[i].y);
        this.controller.move(space.moves[0].x, space.moves[0].y);
        return;
      }
    }
  }

  end_turn() {
  }
};
