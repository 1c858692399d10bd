// /watch/{simulationId}: a live view of one game, for spectators.

import { attachTooltip } from "./board-tooltip.js";
import { byId, el, setText, show } from "./dom.js";
import { capitalised, describeResult, formatScore, GAMES, gameOfScore, gameTitle, seatLabel, turnWord } from "./games.js";
import { viewSnapshotBoard } from "./live-view.js";
import { formatMs, logEntries, MoveList, nickOf, renderBankClocks, renderFacts, renderScoreboard } from "./panel.js";
import { Playback } from "./playback.js";
import { connectionIndicator, VisorSocket } from "./socket.js";

const SPEED_KEY = "visor.animationMs";
const simulationId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");

const ui = {
  watch: byId("watch"),
  missing: byId("missing"),
  canvas: byId("board"),
  wrap: byId("board-wrap"),
  tooltip: byId("tooltip"),
  banner: byId("banner"),
  title: byId("game-title"),
  simId: byId("sim-id"),
  status: byId("status"),
  rulesLine: byId("rules-line"),
  rulesLink: byId("rules-link"),
  joinHint: byId("join-hint"),
  joinSnippet: byId("join-snippet"),
  players: byId("players"),
  turnLabel: byId("turn-label"),
  turn: byId("turn"),
  spectators: byId("spectators"),
  facts: byId("facts"),
  clockFact: byId("clock-fact"),
  clock: byId("clock"),
  legend: byId("legend"),
  result: byId("result"),
  notice: byId("notice"),
  pause: byId("pause"),
  speed: byId("speed"),
  speedValue: byId("speed-value"),
  log: byId("log"),
  logTitle: byId("log-title"),
};

const watch = {
  game: null,
  status: null,
  players: [],
  board: null,
  view: null,
  result: null,
  spectators: null,
  shown: null, // the frame on the board
  clock: null, // the seat on move: {seat, timeoutMs, remainingMs?, incrementMs?, startedAt (performance.now())}
  replies: {}, // each seat's last reply time, ms
};

const moveList = new MoveList(ui.log);
// The turns a page missed (it came late, reconnected, or fell behind), asked of the records.
const backfill = { asking: false, upTo: 0 };

const playback = new Playback(
  (from, to, t) => watch.view && watch.view.render(from, to, t),
  (frame) => frameShown(frame),
);

setText(ui.simId, simulationId);
document.title = `Watch ${simulationId} · Dwarven Tavern Arena`;
setupControls();
setupTooltip();
setInterval(showClock, 100);

new VisorSocket({
  onOpen: (socket) => socket.send({ type: "watch", simulationId }),
  onMessage: receive,
  onStatus: connectionIndicator(byId("connection")),
});

function receive(message) {
  switch (message.type) {
    case "snapshot":
      return onSnapshot(message);
    case "turn":
      return onTurn(message);
    case "left":
      return onLeft(message);
    case "end":
      return onEnd(message);
    case "error":
      return onError(message);
    default:
      return undefined;
  }
}

function onSnapshot(message) {
  watch.game = message.game;
  watch.status = message.status;
  watch.players = message.players || [];
  watch.spectators = message.spectators;
  viewSnapshotBoard(watch, ui.canvas, message);
  ui.watch.dataset.game = message.game;
  setText(ui.title, gameTitle(message.game));
  showRulesLink(message.game);
  setText(ui.turnLabel, `${capitalised(turnWord(message.game, true))} played`);
  setText(ui.logTitle, GAMES[message.game].logTitle);
  showLegend(message.game, message.board);
  watch.replies = { ...(message.replyMs || {}) };
  setClock(message.clock);
  const frame = { state: message.state, turn: message.turn, scores: message.scores, events: [], snapshot: true };
  if (message.state) playback.show(frame);
  else {
    watch.view.render(null, null, 1);
    frameShown(frame);
  }
  if (message.result) showResult(message.result);
  updateStatus();
}

function onTurn(message) {
  if (!watch.view) return;
  if (message.debug) showSaid(message.debug);
  watch.status = "playing";
  if (message.replyMs !== undefined) watch.replies[message.seat] = message.replyMs;
  setClock(message.clock);
  playback.advance({
    state: message.state,
    turn: message.turn,
    scores: message.scores,
    events: message.events,
    seat: message.seat,
    timedOut: message.timedOut,
  });
}

/** The bots' debug texts of some turns ago (the arena holds them back: a plan is shown only
 * once it is old), the newest first. */
function showSaid(said) {
  const list = byId("said-log");
  for (const entry of said) {
    list.prepend(el("li", { dataset: { turn: entry.turn, seat: entry.seat } },
      el("span", { className: "stat-label", text: `${entry.seat}, turn ${entry.turn}: ` }),
      el("span", { className: "debug-text", text: entry.debug })));
  }
  while (list.children.length > 50) list.lastChild.remove();
  show(byId("said"), true);
}

/** A frame reached the board: scores, turn and log follow it, not the network. */
function frameShown(frame) {
  watch.shown = frame;
  const state = frame.state;
  renderScoreboard(ui.players, {
    game: watch.game,
    players: watch.players,
    scores: frame.scores,
    toMove: onMove(),
    declared: GAMES[watch.game].declared(state),
    replies: watch.replies,
  });
  setText(ui.turn, GAMES[watch.game].progress(frame, watch.board));
  renderFacts(ui.facts, GAMES[watch.game].facts(state, watch.board), ui.clockFact);
  if (frame.snapshot) {
    if (frame.turn) fillHistory(frame.turn);
  } else {
    const entries = logEntries(watch.game, frame, watch.players);
    moveList.add(frame.turn, entries);
    const point = entries.find((entry) => entry.kind === "point" && entry.text.startsWith("Point for"));
    if (point) flash(point.text);
  }
  updateStatus();
}

/**
 * The move list from turn 1: a snapshot (on arrival, after a reconnection, or when the page
 * fell behind) shows the position after `upTo` turns, and the turns before it that the list
 * lacks come from the records. The node playing the game writes them out before it answers,
 * so they reach `upTo`; the live turns after it arrive meanwhile, and the list puts each turn
 * in its place. Asked once per snapshot (and on resuming), never per turn.
 */
async function fillHistory(upTo) {
  backfill.upTo = Math.max(backfill.upTo, upTo);
  if (backfill.asking) return; // the answer in flight is followed by another if need be
  backfill.asking = true;
  try {
    let asked = 0;
    while (asked < backfill.upTo) {
      asked = backfill.upTo;
      const from = moveList.firstMissing(asked);
      if (from === null) break;
      const path = `/api/games/${encodeURIComponent(simulationId)}/turns?from=${from}&to=${asked}`;
      const response = await fetch(path);
      if (!response.ok) return; // no record to read: the list keeps what the page saw live
      const answer = await response.json();
      const game = watch.game;
      moveList.fill(answer.turns.map((turn) => ({ turn: turn.turn, entries: logEntries(game, turn, watch.players) })));
    }
  } catch {
    // The network dropped: the reconnection's snapshot asks again.
  } finally {
    backfill.asking = false;
  }
}

function onLeft(message) {
  const who = message.nick ? `${message.nick} (${seatLabel(watch.game, message.seat)})` : seatLabel(watch.game, message.seat);
  showNotice(`${who} left the game and forfeits it.`);
  moveList.note({ kind: "hit", turn: "–", text: `${who} left` });
}

function onEnd(message) {
  watch.status = "finished";
  setClock(null);
  if (!watch.shown || !watch.shown.state) playback.show({ state: message.state, scores: message.result.score, events: [] });
  showResult(message.result);
  updateStatus();
}

const NOTHING_TO_WATCH = ["There is no simulation with this id", "This game has finished"];

function onError(message) {
  if (!NOTHING_TO_WATCH.includes(message.message)) {
    showNotice(message.reason ? `${message.message}: ${message.reason}` : message.message); // e.g. "Server shutting down"
    return;
  }
  // Nothing to watch: say why, clearly, instead of an empty board.
  show(ui.watch, false);
  show(ui.missing, true);
  setText(byId("missing-title"), message.message);
  const finished = message.message === "This game has finished";
  const detail = finished
    ? `Simulation ${simulationId} is over: its replay shows it again, turn by turn.`
    : `Simulation ${simulationId} is not being played here. It may have been mistyped, or it is over: a recorded game has a replay.`;
  setText(byId("missing-detail"), detail);
  const replay = byId("missing-replay");
  replay.href = `/replay/${encodeURIComponent(simulationId)}`;
  setText(replay, finished ? "Watch the replay" : "Look for a replay");
  const result = byId("missing-result");
  if (message.result) {
    // The error carries the result but not the game: the seat and score names tell it.
    const { winner, score, reason } = message.result;
    const game = gameOfScore(score);
    const final = score ? `Final score ${formatScore(game, score)} · ` : "";
    setText(result, `${final}${winner ? `${seatLabel(game, winner)} won` : "Draw"} · ${reason}`);
    show(result, true);
  }
}

function showResult(result) {
  watch.result = result;
  const line = describeResult(watch.game, result, watch.players);
  const score = formatScore(watch.game, result.score);
  ui.result.replaceChildren(
    el("strong", { text: result.winner ? "Game over" : "Game over · draw" }),
    el("span", { className: "result-reason", text: line }),
    score ? el("span", { className: "result-score", text: `Final score ${score}` }) : null,
    el("a", { className: "button button-small result-replay", text: "Watch the replay", attrs: { href: `/replay/${encodeURIComponent(simulationId)}` } }),
  );
  show(ui.result, true);
  setText(ui.banner, line);
  ui.banner.classList.add("banner-final");
  show(ui.banner, true);
}

/** The seat the server awaits a reply from (null when nobody is on move). */
function onMove() {
  return watch.status === "playing" && watch.clock ? watch.clock.seat : null;
}

/**
 * The clock of the side on move, from the server: it counts down from that turn's timeout. In a
 * game created with a time bank, both sides' clocks, the one on move counting down.
 */
function setClock(clock) {
  watch.clock = clock ? { ...clock, startedAt: performance.now() - (clock.elapsedMs || 0) } : null;
  showClock();
}

function showClock() {
  const clock = watch.status === "playing" ? watch.clock : null;
  show(ui.clockFact, Boolean(clock));
  if (!clock) return;
  const elapsed = performance.now() - clock.startedAt;
  let left;
  if (clock.remainingMs) left = renderBankClocks(ui.clock, clock, elapsed, watch.players, watch.game);
  else {
    left = Math.max(0, clock.timeoutMs - elapsed);
    setText(ui.clock, `${nickOf(watch.players, clock.seat, watch.game)}: ${formatMs(left)} left of ${formatMs(clock.timeoutMs)}`);
  }
  ui.clockFact.dataset.seat = clock.seat;
  ui.clockFact.classList.toggle("clock-short", left < Math.min(3000, clock.timeoutMs / 3));
}

/** The game's legend under the board, if it has one (the Tavern's: who scores where). */
function showLegend(game, board) {
  const legend = GAMES[game].legend(board);
  show(ui.legend, Boolean(legend));
  if (!legend) return;
  const row = ({ seat, text }) =>
    el("p", { className: `legend-row seat-${seat}` }, el("span", { className: "swatch", attrs: { "aria-hidden": "true" } }), el("span", { text }));
  ui.legend.replaceChildren(
    el("h2", { className: "legend-title", text: legend.title }),
    ...legend.rows.map(row),
    el("p", { className: "legend-row legend-arrows", text: legend.note }),
  );
}

/** The link to the rules of the game shown, once the snapshot has said which game it is. */
function showRulesLink(game) {
  const href = GAMES[game] ? GAMES[game].rules : null;
  if (href) {
    ui.rulesLink.href = href;
    setText(ui.rulesLink, `The rules of ${gameTitle(game)}`);
  }
  show(ui.rulesLine, Boolean(href));
}

function showNotice(text) {
  setText(ui.notice, text);
  show(ui.notice, true);
}

let flashTimer = 0;
/** A short banner over the board (a point scored); the final result stays instead. */
function flash(text) {
  if (watch.result) return;
  setText(ui.banner, text);
  show(ui.banner, true);
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => {
    if (!watch.result) show(ui.banner, false);
  }, 1600);
}

function updateStatus() {
  setText(ui.spectators, watch.spectators ?? "–");
  const seated = watch.players.filter(Boolean).length;
  let text;
  if (watch.status === "waiting") text = `Waiting for players: ${seated} of ${watch.players.length} seated.`;
  else if (watch.status === "finished") text = "Finished.";
  else if (playback.paused) text = "Paused: the game goes on; resume to catch up.";
  else {
    const seat = onMove();
    text = seat ? `Playing: ${nickOf(watch.players, seat, watch.game)} to move.` : "Playing.";
  }
  setText(ui.status, text);
  const waiting = watch.status === "waiting";
  show(ui.joinHint, waiting);
  if (waiting) {
    const join = { type: "join-simulation", game: watch.game, nick: "my bot", simulationId, ...GAMES[watch.game].joinFields(watch.players) };
    setText(ui.joinSnippet, JSON.stringify(join));
  }
}

function setupControls() {
  const saved = Number(localStorage.getItem(SPEED_KEY));
  if (Number.isFinite(saved) && localStorage.getItem(SPEED_KEY) !== null) ui.speed.value = String(saved);
  const applySpeed = () => {
    playback.durationMs = Number(ui.speed.value);
    setText(ui.speedValue, playback.durationMs === 0 ? "instant" : `${playback.durationMs} ms`);
  };
  applySpeed();
  ui.speed.addEventListener("input", () => {
    applySpeed();
    localStorage.setItem(SPEED_KEY, ui.speed.value);
  });
  ui.pause.addEventListener("click", () => {
    if (playback.paused) {
      playback.resume();
      if (watch.shown && watch.shown.turn) fillHistory(watch.shown.turn); // past what a pause keeps
    } else playback.pause();
    setText(ui.pause, playback.paused ? "Resume" : "Pause");
    ui.pause.setAttribute("aria-pressed", String(playback.paused));
    updateStatus();
  });
}

/** Names on hover (and on tap): the dwarf's name, its player, and the square. */
function setupTooltip() {
  attachTooltip(
    { canvas: ui.canvas, wrap: ui.wrap, tooltip: ui.tooltip },
    () =>
      watch.view && {
        game: watch.game,
        view: watch.view,
        state: watch.shown && watch.shown.state,
        players: watch.players,
        board: watch.board,
      },
    () => playback.draw(),
  );
}
