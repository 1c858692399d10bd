// Dwarven Tavern on a canvas: the wooden floor, both home rows in team colours, barrels and
// dwarves, tweened between two positions, and the last turn drawn as arrows: a dwarf's step in
// a light tint of its team's colour, a pushed barrel in white, a thrown dwarf dashed in red.

import { BoardCanvas, ease, lerp } from "/static/js/board.js";

/** Team colours; the stylesheet gives the pages' seat classes the same ones. */
export const COLOURS = {
  team1: "#d9573b", // red, like the original's bottom strip
  team2: "#e8b63c", // yellow, the top strip
};

const TEAMS = ["team1", "team2"];
const FLOOR = ["#8a6240", "#80593a", "#936a44"];
const INK = "#22150b";
const JUMP = 3; // a piece that moved further than this was reset after a point: no slide
// Light tints of the team colours for steps: never mistaken for a piece of that colour.
const ARROWS = { team1: "#f7a48f", team2: "#f8df96", barrel: "#fff8e6", thrown: "#d8362b" };

export class TavernView {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {{width: number, height: number}} board from the snapshot
   */
  constructor(canvas, board) {
    this.boardInfo = board;
    this.hover = null; // the square under the pointer, ringed
    this.last = null; // [from, to, t] of the last frame drawn, to redraw on resize
    this.board = new BoardCanvas(canvas, board.width, board.height, () => this.redraw());
  }

  redraw() {
    if (!this.board) return; // called once from the BoardCanvas constructor, before we have it
    if (this.last) this.render(...this.last);
    else this.render(null, null, 1);
  }

  /** Draw `to` (a frame with .state), sliding each piece from where it was in `from`. */
  render(from, to, t) {
    this.last = [from, to, t];
    const { board } = this;
    board.clear("#1b1410");
    this.drawFloor();
    board.drawLabels("#b89d7a");
    const state = to && to.state;
    if (!state) return;
    const before = from && from.state && from !== to ? from.state : null;
    const k = ease(t);
    // Under the pieces: each arrow ends at the edge of the piece that arrived.
    this.drawLastTurn(state, to.events || []);
    for (const team of TEAMS) {
      const barrel = state.barrels[team];
      if (!barrel) continue;
      const start = before && before.barrels[team] ? before.barrels[team].coords : barrel.coords;
      this.drawBarrel(team, slide(start, barrel.coords, k));
    }
    for (const team of TEAMS) {
      const starts = new Map(((before && before[team]) || []).map((d) => [d.id, d.coords]));
      for (const dwarf of state[team] || []) {
        const start = starts.get(dwarf.id) || dwarf.coords;
        this.drawDwarf(team, slide(start, dwarf.coords, k));
      }
    }
    if (this.hover) this.drawRing(this.hover);
  }

  /** The turn that led here: an arrow for every piece that moved (from the turn's events). */
  drawLastTurn(state, events) {
    let arrows = 0;
    const teamOf = new Map();
    for (const team of TEAMS) for (const dwarf of state[team] || []) teamOf.set(dwarf.id, team);
    for (const event of events) {
      if (!event.from || !event.to) continue;
      if (event.from.x === event.to.x && event.from.y === event.to.y) continue; // blocked
      const colour = event.kind === "move" ? ARROWS[teamOf.get(event.dwarf)] : ARROWS[event.kind];
      if (!colour) continue;
      this.drawArrow(event.from, event.to, colour, event.kind === "thrown");
      arrows += 1;
    }
    // Published like the grid mapping, for tests and tools: how many arrows the board shows.
    this.board.canvas.dataset.arrows = String(arrows);
  }

  drawArrow(from, to, colour, dashed) {
    const { ctx, cell } = this.board;
    const [ax, ay] = this.board.center(from.x, from.y);
    const [bx, by] = this.board.center(to.x, to.y);
    const angle = Math.atan2(by - ay, bx - ax);
    const head = cell * 0.3;
    const tipX = bx - Math.cos(angle) * cell * 0.36;
    const tipY = by - Math.sin(angle) * cell * 0.36;
    ctx.save();
    ctx.strokeStyle = colour;
    ctx.fillStyle = colour;
    ctx.globalAlpha = 0.9;
    ctx.lineWidth = Math.max(2, cell * 0.12);
    ctx.lineCap = "round";
    ctx.shadowColor = "rgba(0, 0, 0, 0.55)";
    ctx.shadowBlur = cell * 0.12;
    if (dashed) ctx.setLineDash([cell * 0.16, cell * 0.14]);
    ctx.beginPath();
    ctx.moveTo(ax, ay);
    ctx.lineTo(tipX - Math.cos(angle) * head * 0.7, tipY - Math.sin(angle) * head * 0.7);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.beginPath();
    ctx.moveTo(tipX, tipY);
    ctx.lineTo(tipX - Math.cos(angle - 0.5) * head, tipY - Math.sin(angle - 0.5) * head);
    ctx.lineTo(tipX - Math.cos(angle + 0.5) * head, tipY - Math.sin(angle + 0.5) * head);
    ctx.closePath();
    ctx.fill();
    ctx.restore();
  }

  drawFloor() {
    const { board } = this;
    const { ctx, cell } = board;
    const { width, height } = this.boardInfo;
    for (let y = 0; y < height; y += 1) {
      for (let x = 0; x < width; x += 1) {
        // Planks: each row a board, a little variation between cells, fixed for each square.
        ctx.fillStyle = FLOOR[(x * 7 + y * 13 + (y % 2) * 5) % FLOOR.length];
        const [left, top] = board.corner(x, y);
        ctx.fillRect(left, top, cell + 0.5, cell + 0.5);
      }
    }
    // Home rows: team2 defends the top row, team1 the bottom one.
    ctx.globalAlpha = 0.55;
    ctx.fillStyle = COLOURS.team2;
    ctx.fillRect(board.originX, board.originY, width * cell, cell);
    ctx.fillStyle = COLOURS.team1;
    ctx.fillRect(board.originX, board.originY + (height - 1) * cell, width * cell, cell);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = "rgba(20, 10, 4, 0.35)";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let x = 0; x <= width; x += 1) {
      const [left] = board.corner(x, 0);
      ctx.moveTo(Math.round(left) + 0.5, board.originY);
      ctx.lineTo(Math.round(left) + 0.5, board.originY + height * cell);
    }
    for (let y = 0; y <= height; y += 1) {
      const [, top] = board.corner(0, y);
      ctx.moveTo(board.originX, Math.round(top) + 0.5);
      ctx.lineTo(board.originX + width * cell, Math.round(top) + 0.5);
    }
    ctx.stroke();
    ctx.strokeStyle = INK;
    ctx.lineWidth = 2;
    ctx.strokeRect(board.originX, board.originY, width * cell, height * cell);
  }

  drawBarrel(team, [x, y]) {
    const { ctx, cell } = this.board;
    const [cx, cy] = this.board.center(x, y);
    const w = cell * 0.7;
    const h = cell * 0.84;
    ctx.save();
    ctx.beginPath();
    ctx.ellipse(cx, cy, w / 2, h / 2, 0, 0, Math.PI * 2);
    ctx.fillStyle = "#9a6330";
    ctx.fill();
    ctx.lineWidth = Math.max(1, cell * 0.07);
    ctx.strokeStyle = INK;
    ctx.stroke();
    // The team's colour on the hoops, as the original's red and yellow bands.
    ctx.clip();
    ctx.fillStyle = COLOURS[team];
    ctx.fillRect(cx - w / 2, cy - h * 0.32, w, h * 0.17);
    ctx.fillRect(cx - w / 2, cy + h * 0.15, w, h * 0.17);
    ctx.fillStyle = "rgba(255, 230, 190, 0.25)";
    ctx.fillRect(cx - w * 0.12, cy - h / 2, w * 0.12, h);
    ctx.restore();
  }

  drawDwarf(team, [x, y]) {
    const { ctx, cell } = this.board;
    const [cx, cy] = this.board.center(x, y);
    const r = cell * 0.36;
    ctx.beginPath();
    ctx.arc(cx, cy, r, 0, Math.PI * 2);
    ctx.fillStyle = COLOURS[team];
    ctx.fill();
    ctx.lineWidth = Math.max(1, cell * 0.07);
    ctx.strokeStyle = INK;
    ctx.stroke();
    // A steel helmet and a beard, facing the rival's home row as in the original.
    const up = team === "team1" ? -1 : 1;
    ctx.beginPath();
    ctx.arc(cx, cy + up * r * 0.15, r * 0.62, up < 0 ? Math.PI : 0, up < 0 ? 0 : Math.PI);
    ctx.closePath();
    ctx.fillStyle = "#c3c7cd";
    ctx.fill();
    ctx.beginPath();
    ctx.arc(cx, cy - up * r * 0.35, r * 0.38, 0, Math.PI * 2);
    ctx.fillStyle = "#f1e4cc";
    ctx.fill();
  }

  drawRing([x, y]) {
    const { ctx, cell } = this.board;
    const [cx, cy] = this.board.center(x, y);
    ctx.beginPath();
    ctx.arc(cx, cy, cell * 0.5, 0, Math.PI * 2);
    ctx.lineWidth = Math.max(1.5, cell * 0.08);
    ctx.strokeStyle = "#fff6df";
    ctx.stroke();
  }

  /** What stands on a square of the shown position: a dwarf, a barrel, or null. */
  pieceAt(state, [x, y]) {
    if (!state) return null;
    for (const team of TEAMS) {
      for (const dwarf of state[team] || []) {
        if (dwarf.coords.x === x && dwarf.coords.y === y) return { kind: "dwarf", team, dwarf };
      }
    }
    for (const team of TEAMS) {
      const barrel = state.barrels[team];
      if (barrel && barrel.coords.x === x && barrel.coords.y === y) return { kind: "barrel", team };
    }
    return null;
  }
}

function slide(start, end, k) {
  if (Math.abs(end.x - start.x) + Math.abs(end.y - start.y) > JUMP) return [end.x, end.y];
  return [lerp(start.x, end.x, k), lerp(start.y, end.y, k)];
}
