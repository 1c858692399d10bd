// /tv: the strongest pair playing now, for a big screen. /api/tv names the game (visor/tv.py
// says how it is chosen); the page watches it over its websocket with the watch page's board
// views, shows its result for a few seconds when it ends, then asks for the next. With nothing
// to show it follows the lobby and asks again as soon as a game is being played.

import { byId, setText, show } from "./dom.js";
import { describeResult, formatScore, gameTitle, seatLabel } from "./games.js";
import { viewSnapshotBoard } from "./live-view.js";
import { Playback } from "./playback.js";
import { connectionIndicator, VisorSocket } from "./socket.js";

const RESULT_MS = 4000; // how long a finished game's result stays before the next game

const ui = {
  tv: byId("tv"),
  idle: byId("idle"),
  onAir: byId("on-air"),
  seats: [byId("seat-0"), byId("seat-1")],
  score: byId("score"),
  title: byId("game-title"),
  canvas: byId("board"),
  banner: byId("banner"),
  why: byId("why"),
  said: byId("said"),
};

const tv = {
  chosen: null, // /api/tv's choice being shown: {simulationId, game, bothRated, players}
  board: null,
  view: null,
  asking: false,
  askAgain: false, // a cue to choose came while an answer was awaited
  ending: 0, // the timer that moves on after a result
};

const playback = new Playback(
  (from, to, t) => tv.view && tv.view.render(from, to, t),
  (frame) => setText(ui.score, formatScore(tv.chosen && tv.chosen.game, frame.scores) || "–"),
);

const socket = new VisorSocket({
  onOpen: (opened) => {
    opened.send({ type: "lobby" });
    tv.chosen = null; // after a reconnection, choose (and watch) afresh
    choose();
  },
  onMessage: receive,
  onStatus: connectionIndicator(byId("connection")),
});

function receive(message) {
  switch (message.type) {
    case "lobby":
      return onLobby(message);
    case "snapshot":
      return onSnapshot(message);
    case "turn":
      return onTurn(message);
    case "end":
      return onEnd(message);
    case "error":
      return onError(message);
    default:
      return undefined;
  }
}

/** Ask /api/tv which game to show, and watch it (or show that nothing is being played). */
async function choose() {
  if (tv.asking) {
    tv.askAgain = true; // what the answer in flight says may be older than the cue
    return;
  }
  tv.asking = true;
  tv.askAgain = false;
  try {
    const response = await fetch("/api/tv");
    if (!response.ok) return;
    const { simulation } = await response.json();
    if (!simulation) return showIdle();
    if (tv.chosen && tv.chosen.simulationId === simulation.simulationId) return undefined;
    tv.chosen = simulation;
    showChosen(simulation);
    socket.send({ type: "watch", simulationId: simulation.simulationId });
  } catch {
    // The network dropped: the reconnection chooses again.
  } finally {
    tv.asking = false;
    if (tv.askAgain && !tv.chosen) choose();
  }
  return undefined;
}

function showIdle() {
  tv.chosen = null;
  ui.tv.dataset.state = "idle";
  ui.tv.dataset.simulation = "";
  show(ui.onAir, false);
  show(ui.idle, true);
}

function showChosen(chosen) {
  ui.tv.dataset.state = "playing";
  ui.tv.dataset.simulation = chosen.simulationId;
  show(ui.idle, false);
  show(ui.onAir, true);
  show(ui.banner, false);
  setText(ui.title, gameTitle(chosen.game));
  setText(ui.score, "–");
  chosen.players.forEach((player, index) => {
    const node = ui.seats[index];
    if (!node) return;
    node.dataset.seat = player.seat;
    setText(node.querySelector(".tv-name"), player.nick);
    const rating = player.rating === null ? (player.bot ? "not rated yet" : "guest") : `rating ${player.rating.toFixed(1)}`;
    setText(node.querySelector(".tv-rating"), `${seatLabel(chosen.game, player.seat)} · ${rating}`);
  });
  setText(
    ui.why,
    chosen.bothRated ? "The strongest pair on the ladder playing now" : "The most watched game now: no game between two bots rated this season is being played",
  );
}

/** With nothing on screen, a game being played in the lobby is the cue to choose again. */
function onLobby(message) {
  if (tv.chosen || tv.ending) return;
  const playing = (message.simulations || []).some((row) => row.status === "playing");
  if (playing) choose();
}

function onSnapshot(message) {
  if (!tv.chosen || message.simulationId !== tv.chosen.simulationId) return;
  show(ui.said, false);
  viewSnapshotBoard(tv, ui.canvas, message);
  const frame = { state: message.state, turn: message.turn, scores: message.scores, events: [] };
  if (message.state) playback.show(frame);
  else {
    tv.view.render(null, null, 1);
    setText(ui.score, formatScore(message.game, message.scores) || "–");
  }
}

function onTurn(message) {
  if (!tv.view || !tv.chosen) return;
  if (message.debug) {  // what a bot said some turns ago (held back: never a fresh plan)
    const said = message.debug[message.debug.length - 1];
    setText(ui.said, `${said.seat}, turn ${said.turn}: ${said.debug}`);
    show(ui.said, true);
  }
  playback.advance({ state: message.state, turn: message.turn, scores: message.scores, events: message.events, seat: message.seat });
}

function onEnd(message) {
  if (!tv.chosen || message.simulationId !== tv.chosen.simulationId) return;
  if (message.state && tv.view) playback.show({ state: message.state, scores: message.result.score, events: [] });
  setText(ui.score, formatScore(tv.chosen.game, message.result.score) || "–");
  setText(ui.banner, describeResult(tv.chosen.game, message.result, tv.chosen.players));
  ui.banner.classList.add("banner-final");
  show(ui.banner, true);
  ui.tv.dataset.state = "result";
  setText(ui.why, "Game over: the next game follows in a few seconds");
  moveOn(RESULT_MS);
}

/** The game chosen ended before the page could watch it: choose again. */
function onError(message) {
  if (tv.chosen && message.simulationId === tv.chosen.simulationId) moveOn(0);
}

function moveOn(afterMs) {
  clearTimeout(tv.ending);
  tv.ending = setTimeout(() => {
    tv.ending = 0;
    tv.chosen = null;
    choose();
  }, afterMs);
}
