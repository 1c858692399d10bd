// Never moves, like the challenge's template.
module.exports = class {
  constructor(controller, utils) {
    this.controller = controller;
  }

  turn() {
  }

  end_turn() {
  }
};
