// The board view of a live game a snapshot describes, for the pages that follow one (/watch,
// /tv): kept while the board stays the same, replaced when another board arrives.

import { viewOf } from "./games.js";

/** Give `holder` ({view, board}) the view of this snapshot's board on `canvas`. */
export function viewSnapshotBoard(holder, canvas, message) {
  if (holder.view && JSON.stringify(holder.board) === JSON.stringify(message.board)) return;
  holder.board = message.board;
  if (holder.view) holder.view.board.dispose();
  holder.view = viewOf(message.game, canvas, message.board);
}
