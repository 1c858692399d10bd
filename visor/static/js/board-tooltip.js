// What stands on the square under the pointer (and under a finger, on a tap), in the game's
// words (its module's describeSquare): a piece, its player, the square's coordinates. The live
// view and the replay share it; a game's view may also ring the hovered square (ringsHover).

import { el, show } from "./dom.js";
import { GAMES } from "./games.js";
import { nickOf } from "./panel.js";

/**
 * @param {{canvas: HTMLCanvasElement, wrap: HTMLElement, tooltip: HTMLElement}} parts
 * @param {() => ({game: string, view: object, state: object, players: object[], board: object} | null)} current
 *   what the board shows now (null before anything is shown)
 * @param {() => void} redraw draws the board again
 */
export function attachTooltip({ canvas, wrap, tooltip }, current, redraw) {
  const hide = () => {
    show(tooltip, false);
    const shown = current();
    if (shown && shown.view && shown.view.hover) {
      shown.view.hover = null;
      redraw();
    }
  };
  canvas.addEventListener("pointerleave", hide);
  canvas.addEventListener("pointermove", (event) => {
    const shown = current();
    if (!shown || !shown.view) return;
    const { view } = shown;
    const at = view.board.squareAt(event);
    const lines = at ? describeSquare(shown, at) : null;
    if (!lines) {
      hide();
      return;
    }
    tooltip.replaceChildren(...lines.map((line, i) => el(i === 0 ? "strong" : "span", { text: line })));
    show(tooltip, true);
    const box = wrap.getBoundingClientRect();
    const left = Math.min(event.clientX - box.left + 14, box.width - tooltip.offsetWidth - 4);
    const top = event.clientY - box.top + 16;
    tooltip.style.left = `${Math.max(4, left)}px`;
    tooltip.style.top = `${top + tooltip.offsetHeight > box.height ? top - tooltip.offsetHeight - 24 : top}px`;
    if (GAMES[shown.game].ringsHover && (!view.hover || view.hover.join() !== at.join())) {
      view.hover = at;
      redraw();
    }
  });
}

function describeSquare(shown, at) {
  const { game, players } = shown;
  return GAMES[game].describeSquare(shown, at, (seat) => nickOf(players, seat, game));
}
