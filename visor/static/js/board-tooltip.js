// What stands on the square under the pointer (and under a finger, on a tap): a dwarf's name
// and its player, a barrel, a Thud piece, the square's coordinates. The live view and the
// replay share it; the Tavern view also rings the hovered square.

import { el, show } from "./dom.js";
import { seatLabel, square } from "./games.js";
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
    if (shown.game === "tavern" && (!view.hover || view.hover.join() !== at.join())) {
      view.hover = at;
      redraw();
    }
  });
}

function describeSquare({ game, view, state, players, board }, at) {
  if (game === "tavern") {
    const piece = view.pieceAt(state, at);
    if (!piece) return null;
    const owner = nickOf(players, piece.team, "tavern");
    if (piece.kind === "barrel") return [`Barrel of ${seatLabel("tavern", piece.team)}`, owner, square(at)];
    return [piece.dwarf.name, `#${piece.dwarf.id} · ${owner}`, square(at)];
  }
  if (!view.isSquare(at)) return null;
  const has = (list) => (list || []).some((s) => s[0] === at[0] && s[1] === at[1]);
  let what = "Empty square";
  if (state && has(state.dwarfs)) what = "Dwarf";
  else if (state && has(state.trolls)) what = "Troll";
  else if (at[0] === board.thudstone[0] && at[1] === board.thudstone[1]) what = "The Thudstone";
  return [what, square(at)];
}
