// Thud on a canvas: the octagon, the Thudstone, dwarfs and trolls, the last move and the
// pieces it killed. The play page adds an overlay: the moves of the piece under the pointer
// or the selected one, with the kills each would make.

import { BoardCanvas, ease, lerp } from "/static/js/board.js";

/** Side colours; the stylesheet gives the pages' seat classes the same ones. */
export const COLOURS = {
  dwarf: "#4a86e0", // blue, as in the Thud challenge
  troll: "#5aa845", // green
};

const LIGHT = "#e6d5ad";
const DARK = "#cdb587";
const INK = "#1d140c";
const LAST_MOVE = "rgba(255, 190, 40, 0.55)";
const KILL = "#d8362b";

export const key = (square) => `${square[0]},${square[1]}`;

export class ThudView {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {{width: number, height: number, squares: number[][], thudstone: number[]}} board
   */
  constructor(canvas, board) {
    this.boardInfo = board;
    this.squares = new Set(board.squares.map(key));
    // What the play page wants drawn on top; see setOverlay.
    this.overlay = { movable: [], focus: null, moves: [], selected: null, hover: null };
    this.last = null;
    this.board = new BoardCanvas(canvas, board.width, board.height, () => this.redraw());
  }

  redraw() {
    if (!this.board) return; // called once from the BoardCanvas constructor, before we have it
    if (this.last) this.render(...this.last);
    else this.render(null, null, 1);
  }

  /**
   * @param {object} overlay movable: squares of pieces that can move; focus: the square whose
   *   moves are shown; moves: those moves ({to, kind, kills}); selected / hover: squares.
   */
  setOverlay(overlay) {
    this.overlay = { ...this.overlay, ...overlay };
    this.redraw();
  }

  isSquare([x, y]) {
    return this.squares.has(key([x, y]));
  }

  /** Draw `to` (a frame with .state); when it is the ply after `from`, slide the moved piece. */
  render(from, to, t) {
    this.last = [from, to, t];
    const { board } = this;
    board.clear("#1b1410");
    this.drawBoard();
    board.drawLabels("#b89d7a");
    const state = to && to.state;
    if (!state) return;
    const before = from && from.state && from !== to ? from.state : null;
    const move = state.previousMove;
    const tweening = Boolean(before && move && before.ply + 1 === state.ply && t < 1);
    const k = ease(t);
    if (move) this.drawLastMove(move, tweening ? k : 1);
    const mover = before ? before.side : null;
    for (const side of ["dwarf", "troll"]) {
      for (const square of state[`${side}s`] || []) {
        let at = square;
        if (tweening && side === mover && key(square) === key(move.to)) {
          at = [lerp(move.from[0], move.to[0], k), lerp(move.from[1], move.to[1], k)];
        }
        this.drawPiece(side, at, 1);
      }
    }
    if (move && move.killed && move.killed.length) {
      // The victims fade out while the killer arrives, then a red cross marks each square.
      const victim = before ? (before.side === "dwarf" ? "troll" : "dwarf") : null;
      for (const square of move.killed) {
        if (tweening && victim) this.drawPiece(victim, square, 1 - k);
        else this.drawCross(square);
      }
    }
    this.drawOverlay();
  }

  drawBoard() {
    const { board, boardInfo } = this;
    const { ctx, cell } = board;
    ctx.fillStyle = INK;
    const pad = Math.max(2, cell * 0.08);
    for (const [x, y] of boardInfo.squares) {
      const [left, top] = board.corner(x, y);
      ctx.fillRect(left - pad, top - pad, cell + 2 * pad, cell + 2 * pad);
    }
    for (const [x, y] of boardInfo.squares) {
      const [left, top] = board.corner(x, y);
      ctx.fillStyle = (x + y) % 2 === 0 ? LIGHT : DARK;
      ctx.fillRect(left, top, cell + 0.5, cell + 0.5);
    }
    const [sx, sy] = boardInfo.thudstone;
    const [cx, cy] = board.center(sx, sy);
    const [left, top] = board.corner(sx, sy);
    ctx.fillStyle = "#3b3430";
    ctx.fillRect(left, top, cell, cell);
    ctx.beginPath();
    ctx.arc(cx, cy, cell * 0.4, 0, Math.PI * 2);
    ctx.fillStyle = "#9a9a9e";
    ctx.fill();
    ctx.lineWidth = Math.max(1, cell * 0.06);
    ctx.strokeStyle = "#e9e6df";
    ctx.stroke();
  }

  drawLastMove(move, k) {
    const { ctx, cell } = this.board;
    for (const square of [move.from, move.to]) {
      const [left, top] = this.board.corner(square[0], square[1]);
      ctx.fillStyle = LAST_MOVE;
      ctx.fillRect(left, top, cell, cell);
    }
    // The path, drawn as far as the piece has got.
    const [ax, ay] = this.board.center(move.from[0], move.from[1]);
    const [bx, by] = this.board.center(move.to[0], move.to[1]);
    ctx.beginPath();
    ctx.moveTo(ax, ay);
    ctx.lineTo(lerp(ax, bx, k), lerp(ay, by, k));
    ctx.lineWidth = Math.max(2, cell * 0.12);
    ctx.lineCap = "round";
    ctx.strokeStyle = "rgba(190, 120, 10, 0.8)";
    ctx.stroke();
  }

  drawPiece(side, [x, y], alpha) {
    const { ctx, cell } = this.board;
    const [cx, cy] = this.board.center(x, y);
    ctx.save();
    ctx.globalAlpha = alpha;
    ctx.lineWidth = Math.max(1, cell * 0.07);
    if (side === "troll") {
      // A big green boulder of a troll.
      const r = cell * 0.44;
      ctx.beginPath();
      for (let i = 0; i < 8; i += 1) {
        const angle = (i / 8) * Math.PI * 2 + Math.PI / 8;
        const bump = i % 2 === 0 ? 1 : 0.9;
        ctx.lineTo(cx + Math.cos(angle) * r * bump, cy + Math.sin(angle) * r * bump);
      }
      ctx.closePath();
      ctx.fillStyle = COLOURS.troll;
      ctx.fill();
      ctx.strokeStyle = "#173a10";
      ctx.stroke();
      ctx.fillStyle = "#2f6b22";
      ctx.beginPath();
      ctx.arc(cx - r * 0.3, cy - r * 0.15, r * 0.13, 0, Math.PI * 2);
      ctx.arc(cx + r * 0.3, cy - r * 0.15, r * 0.13, 0, Math.PI * 2);
      ctx.fill();
    } else {
      const r = cell * 0.32;
      ctx.beginPath();
      ctx.arc(cx, cy, r, 0, Math.PI * 2);
      ctx.fillStyle = COLOURS.dwarf;
      ctx.fill();
      ctx.strokeStyle = "#112a52";
      ctx.stroke();
      ctx.beginPath();
      ctx.arc(cx, cy - r * 0.05, r * 0.6, Math.PI, 0);
      ctx.closePath();
      ctx.fillStyle = "#c9ccd2";
      ctx.fill();
    }
    ctx.restore();
  }

  drawCross([x, y]) {
    const { ctx, cell } = this.board;
    const [cx, cy] = this.board.center(x, y);
    const r = cell * 0.26;
    ctx.beginPath();
    ctx.moveTo(cx - r, cy - r);
    ctx.lineTo(cx + r, cy + r);
    ctx.moveTo(cx + r, cy - r);
    ctx.lineTo(cx - r, cy + r);
    ctx.lineWidth = Math.max(2, cell * 0.11);
    ctx.lineCap = "round";
    ctx.strokeStyle = KILL;
    ctx.stroke();
  }

  drawOverlay() {
    const { ctx, cell } = this.board;
    const { movable, focus, moves, selected, hover } = this.overlay;
    const ring = (square, colour, width, radius = 0.47) => {
      const [cx, cy] = this.board.center(square[0], square[1]);
      ctx.beginPath();
      ctx.arc(cx, cy, cell * radius, 0, Math.PI * 2);
      ctx.lineWidth = width;
      ctx.strokeStyle = colour;
      ctx.stroke();
    };
    for (const square of movable) ring(square, "rgba(255, 255, 255, 0.55)", Math.max(1, cell * 0.05));
    if (hover) ring(hover, "#fff8e6", Math.max(1.5, cell * 0.08));
    if (selected) ring(selected, "#ffcf3a", Math.max(2, cell * 0.12));
    if (!focus) return;
    for (const move of moves) {
      const [cx, cy] = this.board.center(move.to[0], move.to[1]);
      ctx.beginPath();
      if (move.kills > 0) {
        ctx.arc(cx, cy, cell * 0.3, 0, Math.PI * 2);
        ctx.fillStyle = KILL;
        ctx.fill();
        ctx.fillStyle = "#fff";
        ctx.font = `bold ${Math.max(9, Math.round(cell * 0.38))}px system-ui, sans-serif`;
        ctx.textAlign = "center";
        ctx.textBaseline = "middle";
        ctx.fillText(String(move.kills), cx, cy + cell * 0.02);
      } else if (move.kind === "walk") {
        ctx.arc(cx, cy, cell * 0.14, 0, Math.PI * 2);
        ctx.fillStyle = "rgba(20, 60, 20, 0.65)";
        ctx.fill();
      } else {
        // Hurls and shoves that kill nothing: a hollow diamond.
        const r = cell * 0.2;
        ctx.moveTo(cx, cy - r);
        ctx.lineTo(cx + r, cy);
        ctx.lineTo(cx, cy + r);
        ctx.lineTo(cx - r, cy);
        ctx.closePath();
        ctx.lineWidth = Math.max(1.5, cell * 0.07);
        ctx.strokeStyle = "rgba(20, 60, 20, 0.8)";
        ctx.stroke();
      }
    }
  }
}
