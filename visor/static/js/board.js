// A crisp, resizable canvas for a grid board.
//
// The canvas's CSS size follows its container (CSS decides how big the board is, from a phone
// to a wide screen); its backing store is that size times devicePixelRatio, so lines and text
// stay sharp on high-density screens. Drawing code works in CSS pixels.
//
// The grid mapping is published on the canvas as data attributes (data-cell-size, data-origin-x,
// data-origin-y, data-columns, data-rows, all in CSS pixels from the canvas's top-left), so a
// test or an accessibility tool can find the square under a point without reading our code.

export class BoardCanvas {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {number} columns
   * @param {number} rows
   * @param {() => void} redraw called whenever the size or the pixel ratio changed
   */
  constructor(canvas, columns, rows, redraw) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.redraw = redraw;
    this.width = 0;
    this.height = 0;
    this.setGrid(columns, rows);
    this.observer = new ResizeObserver(() => this.resize());
    this.observer.observe(canvas);
    // Zooming or moving the window to another screen changes the ratio, not always the size.
    this.watchPixelRatio();
  }

  /** Stop following the canvas's size (the view is being replaced). */
  dispose() {
    this.observer.disconnect();
    this.redraw = () => {};
  }

  setGrid(columns, rows) {
    this.columns = columns;
    this.rows = rows;
    // Room around the grid for the coordinate labels bot authors navigate by.
    this.marginCells = 0.8;
    this.canvas.style.aspectRatio = `${columns + 2 * this.marginCells} / ${rows + 2 * this.marginCells}`;
    this.resize();
  }

  watchPixelRatio() {
    const query = matchMedia(`(resolution: ${window.devicePixelRatio}dppx)`);
    query.addEventListener(
      "change",
      () => {
        this.resize();
        this.watchPixelRatio();
      },
      { once: true },
    );
  }

  resize() {
    const rect = this.canvas.getBoundingClientRect();
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, rect.width);
    const height = Math.max(1, rect.height);
    const pixelsWide = Math.round(width * ratio);
    const pixelsHigh = Math.round(height * ratio);
    if (this.canvas.width !== pixelsWide) this.canvas.width = pixelsWide;
    if (this.canvas.height !== pixelsHigh) this.canvas.height = pixelsHigh;
    this.ctx.setTransform(pixelsWide / width, 0, 0, pixelsHigh / height, 0, 0);
    this.width = width;
    this.height = height;
    const span = Math.max(this.columns, this.rows) + 2 * this.marginCells;
    this.cell = Math.min(width, height) / span;
    this.originX = (width - this.columns * this.cell) / 2;
    this.originY = (height - this.rows * this.cell) / 2;
    const data = this.canvas.dataset;
    data.cellSize = this.cell.toFixed(3);
    data.originX = this.originX.toFixed(3);
    data.originY = this.originY.toFixed(3);
    data.columns = String(this.columns);
    data.rows = String(this.rows);
    this.redraw();
  }

  /** The CSS-pixel centre of square (x, y), which may be fractional while a piece moves. */
  center(x, y) {
    return [this.originX + (x + 0.5) * this.cell, this.originY + (y + 0.5) * this.cell];
  }

  /** The top-left corner of square (x, y). */
  corner(x, y) {
    return [this.originX + x * this.cell, this.originY + y * this.cell];
  }

  /** The square under a pointer event, or null outside the grid. */
  squareAt(event) {
    const rect = this.canvas.getBoundingClientRect();
    const x = Math.floor((event.clientX - rect.left - this.originX) / this.cell);
    const y = Math.floor((event.clientY - rect.top - this.originY) / this.cell);
    if (x < 0 || y < 0 || x >= this.columns || y >= this.rows) return null;
    return [x, y];
  }

  clear(colour) {
    this.ctx.fillStyle = colour;
    this.ctx.fillRect(0, 0, this.width, this.height);
  }

  /** Column numbers above and below, row numbers left and right, when there is room. */
  drawLabels(colour) {
    const { ctx, cell } = this;
    if (cell < 13) return;
    ctx.save();
    ctx.fillStyle = colour;
    ctx.font = `${Math.max(9, Math.round(cell * 0.36))}px system-ui, sans-serif`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    const gap = cell * 0.42;
    for (let x = 0; x < this.columns; x += 1) {
      const [cx] = this.center(x, 0);
      ctx.fillText(String(x), cx, this.originY - gap);
      ctx.fillText(String(x), cx, this.originY + this.rows * cell + gap);
    }
    for (let y = 0; y < this.rows; y += 1) {
      const [, cy] = this.center(0, y);
      ctx.fillText(String(y), this.originX - gap, cy);
      ctx.fillText(String(y), this.originX + this.columns * cell + gap, cy);
    }
    ctx.restore();
  }
}

export function lerp(a, b, t) {
  return a + (b - a) * t;
}

/** Ease in and out, so pieces start and stop gently. */
export function ease(t) {
  return t < 0.5 ? 2 * t * t : 1 - (-2 * t + 2) ** 2 / 2;
}
