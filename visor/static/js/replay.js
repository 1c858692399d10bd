// /replay/{id}: a recorded game played back on the live view's canvas, with play, pause, steps,
// a seek slider over the turns (points and kills marked on it), a speed control, and the list
// of every turn, each a button that shows it. /replay/{id}?turn=N opens at turn N (the address
// follows the turn shown, so it can be shared); the game downloads as JSON or as a GIF.
//
// Every position comes from the server (GET /api/games/{id}/replay), recomputed from the
// record's seed and turns by the pure rules; states and events have the shapes the live view
// draws, so the same views (each game's, from its module: games.js) and panel pieces show them.
//
// /replay (no id) opens a game file (JSON lines, as `tavern play --output` and
// `tavern replay --output` write it, docs/play.md), chosen or dropped on the page (on any replay
// page): its game line has the first position and each turn line the position after it, as the
// server's replay has them, so the file is shown as a recorded game is, with nothing sent.
//
// "Play from here" (a recorded game only) opens a new simulation at the turn shown
// (POST /api/games/{id}/play-from?turn=N): the page shows its id and the line a bot joins it
// with, and for a game a person can play here a link that plays one side on its play page.
//
// The canvas says which frame it has finished drawing in data-frame (the frame's index, which
// is also its turn number), so a test or a tool knows when the board shows a given turn.

import { attachTooltip } from "./board-tooltip.js";
import { byId, el, setText, show } from "./dom.js";
import { capitalised, describeResult, formatScore, GAMES, gameTitle, seatLabel, turnWord, viewOf } from "./games.js";
import { formatClock, formatMs, markOf, nickOf, renderFacts, renderScoreboard, turnEntries, turnSummary } from "./panel.js";
import { Playback } from "./playback.js";
import { formatTime } from "./records.js";

const SPEEDS = [0.5, 1, 2, 4, 8, 16, 32, 64]; // turns per second
const DEFAULT_SPEED = 4; // 8 turns a second
const SPEED_KEY = "visor.replaySpeed";
const MAX_TWEEN_MS = 320;
const gameId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");

const ui = {
  loading: byId("loading"),
  loadingText: byId("loading-text"),
  missing: byId("missing"),
  missingTitle: byId("missing-title"),
  missingDetail: byId("missing-detail"),
  missingRecord: byId("missing-record"),
  openFile: byId("open-file"),
  fileInput: byId("file-input"),
  downloadFile: byId("download-file"),
  main: byId("replay"),
  canvas: byId("board"),
  wrap: byId("board-wrap"),
  tooltip: byId("tooltip"),
  banner: byId("banner"),
  first: byId("first"),
  back: byId("back"),
  play: byId("play"),
  playIcon: byId("play-icon"),
  pauseIcon: byId("pause-icon"),
  playLabel: byId("play-label"),
  forward: byId("forward"),
  last: byId("last"),
  speed: byId("speed"),
  speedValue: byId("speed-value"),
  seek: byId("seek"),
  seekMarks: byId("seek-marks"),
  moves: byId("moves"),
  movesTitle: byId("moves-title"),
  turnLink: byId("turn-link"),
  downloadGif: byId("download-gif"),
  position: byId("position"),
  title: byId("game-title"),
  id: byId("game-id"),
  status: byId("status"),
  context: byId("context"),
  rulesLine: byId("rules-line"),
  rulesLink: byId("rules-link"),
  players: byId("players"),
  turnLabel: byId("turn-label"),
  turn: byId("turn"),
  facts: byId("facts"),
  result: byId("result"),
  notice: byId("notice"),
  events: byId("events"),
  eventsTitle: byId("events-title"),
  seatStats: byId("seat-stats"),
  thinkChart: byId("think-chart"),
  thinkSvg: byId("think-svg"),
  thinkLegend: byId("think-legend"),
  download: byId("download"),
  watchLive: byId("watch-live"),
  matchesLink: byId("matches-link"),
  playFrom: byId("play-from"),
  playFromButton: byId("play-from-button"),
  playFromCreated: byId("play-from-created"),
  playFromId: byId("play-from-id"),
  playFromTurn: byId("play-from-turn"),
  playFromSeed: byId("play-from-seed"),
  playFromJoin: byId("play-from-join"),
  playFromHint: byId("play-from-hint"),
  playFromCopy: byId("play-from-copy"),
  playFromPerson: byId("play-from-person"),
  playFromWatch: byId("play-from-watch"),
  playFromError: byId("play-from-error"),
};

const replay = {
  game: null,
  status: null,
  result: null,
  board: null,
  players: [], // by seat, with the tournament bot's name as the nick when there is one
  frames: [],
  view: null,
  index: 0, // the frame shown (or being tweened to)
  playing: false,
  timer: 0,
  ready: false, // the controls and the tooltip are set up (once, whatever is shown next)
};

const playback = new Playback(
  (from, to, t) => {
    if (!replay.view) return;
    replay.view.render(from, to, t);
    if (t >= 1) ui.canvas.dataset.frame = String(to.index);
  },
  (frame) => frameShown(frame),
);

setupFiles();
if (gameId && gameId !== "replay") {
  setText(ui.id, gameId);
  document.title = `Replay ${gameId} · Dwarven Tavern Arena`;
  ui.download.href = `/api/games/${encodeURIComponent(gameId)}`;
  ui.download.setAttribute("download", `${gameId}.json`);
  ui.downloadFile.href = `/api/games/${encodeURIComponent(gameId)}/game.jsonl`;
  ui.downloadFile.setAttribute("download", `${gameId}.jsonl`);
  ui.downloadGif.href = `/api/games/${encodeURIComponent(gameId)}/replay.gif`;
  ui.downloadGif.setAttribute("download", `${gameId}.gif`);
  load();
} else {
  show(ui.loading, false);
  show(ui.openFile, true);
}

/** A game file chosen, or dropped anywhere on the page, is shown in place of what was. */
function setupFiles() {
  ui.fileInput.addEventListener("change", () => {
    if (ui.fileInput.files.length) openFile(ui.fileInput.files[0]);
  });
  document.addEventListener("dragover", (event) => {
    if (event.dataTransfer && [...event.dataTransfer.types].includes("Files")) event.preventDefault();
  });
  document.addEventListener("drop", (event) => {
    const file = event.dataTransfer && event.dataTransfer.files[0];
    if (!file) return;
    event.preventDefault();
    openFile(file);
  });
}

async function openFile(file) {
  if (replay.playing) pause();
  show(ui.openFile, false);
  show(ui.main, false);
  show(ui.missing, false);
  show(ui.loading, true);
  setText(ui.loadingText, `Reading ${file.name}…`);
  let body;
  try {
    body = gameOfFile(await file.text());
  } catch (error) {
    missing("This file does not replay", `${file.name}: ${error.message}.`);
    return;
  }
  setText(ui.id, file.name);
  document.title = `Replay ${file.name} · Dwarven Tavern Arena`;
  for (const link of [ui.download, ui.downloadFile, ui.downloadGif]) show(link, false);
  history.replaceState(null, "", "/replay");
  start(body);
  describeStatus(body);
}

async function load() {
  let response;
  let body = null;
  try {
    response = await fetch(`/api/games/${encodeURIComponent(gameId)}/replay`);
    body = await response.json();
  } catch {
    if (!response) {
      missing("The arena cannot be reached", "The replay could not be loaded: is the arena running? Reload to try again.");
      return;
    }
  }
  if (response.status === 404) {
    missing(
      "No recorded game with this id",
      `There is no game ${gameId} in this arena's records. The id may have been mistyped, or the game was played on another arena.`,
    );
    return;
  }
  if (response.status === 409) {
    const why = body && body.error ? body.error : "the current rules reject one of its turns";
    missing("This record does not replay", `Game ${gameId} is recorded, but ${lowerFirst(why)}. Its record can still be downloaded.`);
    ui.missingRecord.href = `/api/games/${encodeURIComponent(gameId)}`;
    ui.missingRecord.setAttribute("download", `${gameId}.json`);
    show(ui.missingRecord, true);
    return;
  }
  if (response.status === 503) {
    const why = body && body.error ? body.error : "the arena is busy";
    missing("The records cannot be read now", `Game ${gameId}: ${why}. Reload in a few seconds to try again.`);
    return;
  }
  if (!response.ok || !body || !Array.isArray(body.frames) || body.frames.length === 0) {
    const why = body && body.error ? body.error : `the arena answered ${response.status}`;
    missing("This replay cannot be shown", `Game ${gameId}: ${why}.`);
    return;
  }
  start(body);
}

/** A game file's lines as the replay the server gives for a recorded game (server/game_file.py
 * writes them); throws an Error naming the line that does not read. */
function gameOfFile(text) {
  let data = null;
  text.split("\n").forEach((raw, index) => {
    if (!raw.trim()) return;
    const where = `line ${index + 1}`;
    let line;
    try {
      line = JSON.parse(raw);
    } catch {
      throw new Error(`${where} is not JSON`);
    }
    const kind = line && typeof line === "object" ? line.type : null;
    if (data === null) {
      if (kind !== "game") throw new Error(`${where}: a game file begins with its game line`);
      const origin = line.settings && line.settings.from ? line.settings.from : null;
      if (!line.state || !Array.isArray(line.players)) throw new Error(`${where}: the game line has no first position (tavern replay FILE --output NEW writes the file again with it)`);
      data = {
        id: line.id,
        game: line.game,
        players: line.players,
        seats: line.players.map((player) => player.seat),
        board: line.board,
        result: null,
        status: "unfinished",
        seed: line.seed,
        startedAt: line.startedAt,
        tournament: null,
        from: origin ? { game: origin.game || null, turn: origin.turn, given: Boolean(origin.position) } : null,
        clock: (line.settings && line.settings.clock) || null,
        // A game begun at a given position numbers its turns on from it.
        frames: [{ turn: origin && origin.position ? origin.turn : 0, seat: null, state: line.state, events: [], scores: line.scores }],
      };
    } else if (kind === "turn") {
      const expected = data.frames[0].turn + data.frames.length;
      if (line.turn !== expected) throw new Error(`${where}: turn ${line.turn} where turn ${expected} should be`);
      if (!line.state || !data.seats.includes(line.seat)) throw new Error(`${where}: the turn line has no position or no seat`);
      const debug = typeof line.debug === "string" ? line.debug : null;
      const stderr = typeof line.stderr === "string" ? line.stderr : null;
      const timing = Array.isArray(line.timing) ? line.timing : null;
      data.frames.push({ turn: line.turn, seat: line.seat, state: line.state, events: line.events || [], scores: line.scores, debug, stderr, timing });
    } else if (kind === "result" && data.result === null) {
      data.result = line.result;
      data.status = "finished";
    } else {
      throw new Error(`${where}: a ${kind} line has no place there`);
    }
  });
  if (data === null) throw new Error("the file is empty");
  return data;
}

function missing(title, detail) {
  show(ui.loading, false);
  show(ui.main, false);
  show(ui.missing, true);
  setText(ui.missingTitle, title);
  setText(ui.missingDetail, detail);
  document.title = `${title} · Dwarven Tavern Arena`;
}

function lowerFirst(text) {
  return text ? text[0].toLowerCase() + text.slice(1) : text;
}

// --- starting -----------------------------------------------------------------------------

function start(data) {
  replay.game = data.game;
  replay.status = data.status;
  replay.result = data.result;
  replay.board = data.board;
  replay.players = (data.seats || []).map((seat) => {
    const player = (data.players || []).find((p) => p && p.seat === seat);
    return player ? { ...player, nick: player.bot || player.nick, record: player } : null;
  });
  replay.frames = data.frames.map((frame, index) => ({ ...frame, index }));
  replay.from = data.from || null;
  replay.clock = data.clock || null; // a game created with a time bank: {initialMs, incrementMs}

  show(ui.loading, false);
  show(ui.main, true); // before the view, so that the canvas has its size
  ui.main.dataset.game = data.game;
  replay.view = viewOf(data.game, ui.canvas, data.board);

  setText(ui.title, `${gameTitle(data.game)} replay`);
  const rules = GAMES[data.game].rules;
  if (rules) {
    ui.rulesLink.href = rules;
    setText(ui.rulesLink, `The rules of ${gameTitle(data.game)}`);
  }
  show(ui.rulesLine, Boolean(rules));
  const unit = turnWord(data.game);
  setText(ui.turnLabel, capitalised(unit));
  setText(ui.eventsTitle, `This ${unit}`);
  ui.seek.max = String(replay.frames.length - 1);
  setText(ui.movesTitle, `Every ${unit}`);
  renderMoves();
  renderMarks();
  show(ui.watchLive, data.status === "playing");
  show(ui.playFrom, Boolean(gameId && gameId !== "replay"));
  ui.watchLive.href = `/watch/${encodeURIComponent(gameId)}`;
  describeStatus(null);
  renderSeatStats();
  renderThinkChart();
  playback.show(replay.frames[turnFromAddress()]);
  if (replay.ready) return;
  replay.ready = true;
  loadDetails();
  setupControls();
  ui.playFromButton.addEventListener("click", playFromHere);
  ui.playFromCopy.addEventListener("click", copyJoin);
  attachTooltip(
    { canvas: ui.canvas, wrap: ui.wrap, tooltip: ui.tooltip },
    () =>
      replay.view && {
        game: replay.game,
        view: replay.view,
        state: currentFrame().state,
        players: replay.players,
        board: replay.board,
      },
    () => playback.draw(),
  );
}

/** The record's summary (tournament, pairing, dates) for the header: not in the replay. */
async function loadDetails() {
  if (!gameId || gameId === "replay") return; // a file: its summary came with it
  try {
    const response = await fetch(`/api/games/${encodeURIComponent(gameId)}`);
    if (!response.ok) return;
    describeStatus(await response.json());
  } catch {
    // The header just says less.
  }
}

function describeStatus(record) {
  const lastTurn = replay.frames[replay.frames.length - 1].turn;
  const unit = turnWord(replay.game, lastTurn !== 1);
  const states = {
    finished: `Finished after ${lastTurn} ${unit}`,
    unfinished: `Unfinished: the server stopped after ${lastTurn} ${unit}`,
    playing: `Still being played: ${lastTurn} ${unit} recorded so far`,
  };
  let text = states[replay.status] || `${lastTurn} ${unit}`;
  if (record && record.startedAt) text += ` · ${formatTime(record.startedAt)}`;
  setText(ui.status, `${text}.`);
  if (!record) return;
  const parts = [];
  if (record.tournament) {
    show(ui.watchLive, false); // a tournament plays in its own arena, not watched here
    parts.push(
      "Tournament ",
      el("a", { text: record.tournament, attrs: { href: `/league?tournament=${encodeURIComponent(record.tournament)}` } }),
    );
    ui.matchesLink.href = `/matches?tournament=${encodeURIComponent(record.tournament)}`;
    show(ui.matchesLink, true);
  }
  if (record.seed !== undefined && record.seed !== null) parts.push(`${parts.length ? " · " : ""}seed ${record.seed}`);
  if (replay.clock) {
    const { initialMs, incrementMs } = replay.clock;
    const clock = `clock ${formatClock(initialMs)} each${incrementMs ? `, +${formatMs(incrementMs)} a move` : ""}`;
    parts.push(el("span", { text: `${parts.length ? " · " : ""}${clock}`, attrs: { id: "clock-setting" } }));
  }
  if (replay.from) {
    const from = replay.from;
    const link = from.game
      ? el("a", { text: `game ${from.game}, turn ${from.turn}`, attrs: { href: `/replay/${encodeURIComponent(from.game)}?turn=${from.turn}`, id: "from-link" } })
      : `a position given after turn ${from.turn}`;
    parts.push(`${parts.length ? " · " : ""}${from.given ? "begun at " : "played on from "}`, link);
  }
  ui.context.replaceChildren(...parts);
}

/** The turn asked for in the address: ?turn=N (or #turn=N, as links made earlier say). */
function turnFromAddress() {
  const asked = new URLSearchParams(location.search).get("turn") ?? (/^#turn=(\d+)$/.exec(location.hash) || [])[1];
  if (!asked || !/^\d+$/.test(asked)) {
    const start = replay.from ? replay.frames.findIndex((frame) => frame.turn === replay.from.turn) : 0;
    return Math.max(start, 0);
  }
  const turn = Number(asked);
  const index = replay.frames.findIndex((frame) => frame.turn === turn);
  return index >= 0 ? index : 0;
}

function currentFrame() {
  return replay.frames[replay.index];
}

// --- what the panel shows -------------------------------------------------------------------

function frameShown(frame) {
  replay.index = frame.index;
  const { game, frames } = replay;
  const lastIndex = frames.length - 1;
  const atEnd = frame.index === lastIndex;
  const lastTurn = frames[lastIndex].turn;
  const state = frame.state;
  const info = GAMES[game];
  const over = atEnd && replay.result;

  ui.seek.value = String(frame.index);
  ui.seek.setAttribute("aria-valuetext", `${capitalised(turnWord(game))} ${frame.turn} of ${lastTurn}`);
  setText(ui.position, `${frame.turn} / ${lastTurn}`);
  setText(ui.turn, `${frame.turn} of ${lastTurn}`);
  renderScoreboard(ui.players, {
    game,
    players: replay.players,
    scores: frame.scores,
    toMove: over ? null : info.toMove(state),
    declared: info.declared(state),
  });
  renderFacts(ui.facts, info.facts(state, replay.board));
  renderEvents(frame);
  markMove(frame.index);
  showEnd(atEnd);
  ui.first.disabled = frame.index === 0;
  ui.back.disabled = frame.index === 0;
  ui.forward.disabled = atEnd;
  ui.last.disabled = atEnd;
  if (!replay.playing) rememberTurn(frame);
}

function renderEvents(frame) {
  const { game } = replay;
  const items = [];
  if (frame.index === 0) {
    items.push(el("li", { className: "log-head" }, el("span", { className: "log-turn", text: "0" }), replay.from && replay.from.given ? "The position this game began at." : "The start: nothing has moved yet."));
  } else {
    const who = frame.seat ? nickOf(replay.players, frame.seat, game) : "?";
    items.push(el("li", { className: "log-head" }, el("span", { className: "log-turn", text: frame.turn }), `${who} played`));
    const entries = turnEntries(game, frame, replay.players);
    if (entries.length === 0) items.push(el("li", { className: "log-move" }, el("span", { className: "log-turn" }), "Nothing moved."));
    for (const entry of entries) {
      items.push(el("li", { className: `log-${entry.kind}` }, el("span", { className: "log-turn" }), entry.text));
    }
    if (frame.debug) {
      items.push(el("li", { className: "log-debug" }, el("span", { className: "stat-label", text: `What ${who} said of it (debug)` }), el("pre", { className: "snippet debug-text", text: frame.debug })));
    }
    if (frame.stderr) {
      items.push(el("li", { className: "log-debug" }, el("span", { className: "stat-label", text: `What ${who} wrote on stderr during the turn` }), el("pre", { className: "snippet stderr-text", text: frame.stderr })));
    }
  }
  ui.events.replaceChildren(...items);
}

/** Every turn, each a button that shows it. */
function renderMoves() {
  const { game, players } = replay;
  const items = replay.frames.map((frame) => {
    const start = replay.from && replay.from.given ? "The position given" : "The start";
    const text = frame.index === 0 ? start : turnSummary(game, frame, players);
    const button = el("button", { className: "move-button", text, attrs: { type: "button" }, dataset: { index: String(frame.index) } });
    button.prepend(el("span", { className: "log-turn", text: frame.turn }));
    button.addEventListener("click", () => jump(frame.index));
    const kind = markOf(game, frame, players);
    return el("li", { className: `move seat-${frame.seat || "none"}${kind ? " move-marked" : ""}` }, button);
  });
  ui.moves.replaceChildren(...items);
}

/** The turn shown, marked in the list of every turn and scrolled into its view. */
function markMove(index) {
  const previous = ui.moves.querySelector("[aria-current]");
  if (previous) previous.removeAttribute("aria-current");
  const item = ui.moves.children[index];
  if (!item) return;
  const button = item.firstElementChild;
  button.setAttribute("aria-current", "step");
  // Scroll the list only (not the page), keeping the turn in view.
  const list = ui.moves;
  const top = item.offsetTop - list.offsetTop;
  if (top < list.scrollTop || top + item.offsetHeight > list.scrollTop + list.clientHeight) {
    list.scrollTop = top - list.clientHeight / 2;
  }
}

/** What the turns scored (points, kills: the game's markOf) on the seek bar; each mark shows its turn. */
function renderMarks() {
  const last = Math.max(1, replay.frames.length - 1);
  const unit = turnWord(replay.game);
  const marks = [];
  for (const frame of replay.frames) {
    const mark = markOf(replay.game, frame, replay.players);
    if (!mark) continue;
    const label = `${mark.text}, ${unit} ${frame.turn}`;
    const button = el("button", {
      className: `seek-mark seat-${mark.seat}`,
      attrs: { type: "button", title: label, "aria-label": label },
      dataset: { index: String(frame.index) },
    });
    button.style.left = `${(100 * frame.index) / last}%`;
    button.addEventListener("click", () => jump(frame.index));
    marks.push(button);
  }
  ui.seekMarks.replaceChildren(...marks);
  ui.seekMarks.dataset.count = String(marks.length);
}

/** The result and its reason, once the replay reaches the last turn. */
function showEnd(atEnd) {
  const { game, result, status } = replay;
  if (atEnd && result) {
    const line = describeResult(game, result, replay.players);
    const score = formatScore(game, result.score);
    ui.result.replaceChildren(
      el("strong", { text: result.winner ? "Game over" : "Game over · draw" }),
      el("span", { className: "result-reason", text: line }),
      score ? el("span", { className: "result-score", text: `Final score ${score}` }) : null,
    );
    setText(ui.banner, line);
  }
  show(ui.result, Boolean(atEnd && result));
  show(ui.banner, Boolean(atEnd && result));
  const notices = {
    unfinished: "The server stopped during this game: the record ends here, without a result.",
    playing: "This game is still being played: the record ends here for now. Reload for more.",
  };
  const notice = atEnd ? notices[status] : null;
  setText(ui.notice, notice);
  show(ui.notice, Boolean(notice));
}

/** Per seat: who played, how fast it answered, what the arena rejected, its stderr's end. */
function renderSeatStats() {
  const ms = (value) => (value === null || value === undefined ? "–" : `${value.toFixed(1)} ms`);
  const items = replay.players.filter(Boolean).map((player) => {
    const record = player.record;
    const figures = [
      `${record.replies ?? 0} ${record.replies === 1 ? "reply" : "replies"}`,
      `mean ${ms(record.replyMeanMs)}`,
      `worst ${ms(record.replyWorstMs)}`,
      `${record.errors ?? 0} ${record.errors === 1 ? "error" : "errors"}`,
    ];
    return el(
      "li",
      { className: `seat-stat seat-${player.seat}`, dataset: { seat: player.seat } },
      el(
        "p",
        { className: "stat-who" },
        el("span", { className: "swatch", attrs: { "aria-hidden": "true" } }),
        el("span", { className: "seat-label", text: seatLabel(replay.game, player.seat) }),
        el("strong", { className: "nick", text: player.nick }),
        record.bot && record.nick !== record.bot ? el("span", { className: "hint stat-nick", text: `joined as ${record.nick}` }) : null,
        el("span", { className: "badge", text: record.kind }),
      ),
      el("p", { className: "stat-figures", text: figures.join(" · ") }),
      record.lastError ? el("p", { className: "stat-error" }, el("span", { className: "stat-label", text: "Last error" }), record.lastError) : null,
      record.stderr
        ? el("div", { className: "stat-stderr" }, el("span", { className: "stat-label", text: "The end of its stderr" }), el("pre", { className: "snippet", text: record.stderr }))
        : null,
    );
  });
  ui.seatStats.replaceChildren(el("ul", { className: "seat-stat-list" }, ...items));
}

const SVG = "http://www.w3.org/2000/svg";
const CHART = { width: 320, height: 120, pad: 4 };

const THINK_MS = 3; // in the records' `timing`: [reply, round trip, lateness, think], in ms

/** Each side's think time per turn (the records' `timing`: a reply's time less the round trip
 * of its connection and the arena's own lateness), one line per seat, scaled to the longest. */
function renderThinkChart() {
  const timed = replay.frames.filter((frame) => Array.isArray(frame.timing) && typeof frame.timing[THINK_MS] === "number");
  show(ui.thinkChart, timed.length > 0);
  if (!timed.length) return;
  const first = replay.frames[0].turn;
  const span = Math.max(1, replay.frames[replay.frames.length - 1].turn - first);
  const most = Math.max(1, ...timed.map((frame) => frame.timing[THINK_MS]));
  const x = (turn) => CHART.pad + ((turn - first) / span) * (CHART.width - 2 * CHART.pad);
  const y = (ms) => CHART.height - CHART.pad - (ms / most) * (CHART.height - 2 * CHART.pad);
  const players = replay.players.filter(Boolean);
  const lines = players.map((player) => {
    const own = timed.filter((frame) => frame.seat === player.seat);
    const group = document.createElementNS(SVG, "g");
    group.setAttribute("class", `seat-${player.seat}`);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("class", "think-line");
    line.setAttribute("points", own.map((frame) => `${x(frame.turn).toFixed(1)},${y(frame.timing[THINK_MS]).toFixed(1)}`).join(" "));
    line.dataset.points = String(own.length);
    group.append(line);
    return group;
  });
  ui.thinkSvg.replaceChildren(...lines);
  const legend = players.map((player) => {
    const own = timed.filter((frame) => frame.seat === player.seat).map((frame) => frame.timing[THINK_MS]);
    const mean = own.length ? own.reduce((sum, ms) => sum + ms, 0) / own.length : 0;
    const figures = own.length ? `mean ${mean.toFixed(0)} ms, most ${Math.max(...own)} ms` : "no timed reply";
    return el(
      "li",
      { className: `legend-row seat-${player.seat}` },
      el("span", { className: "swatch", attrs: { "aria-hidden": "true" } }),
      el("span", { text: `${seatLabel(replay.game, player.seat)} ${player.nick}: ${figures}` }),
    );
  });
  ui.thinkLegend.replaceChildren(...legend);
}

// --- the controls ---------------------------------------------------------------------------

function setupControls() {
  const saved = Number(localStorage.getItem(SPEED_KEY));
  ui.speed.value = String(Number.isInteger(saved) && saved >= 0 && saved < SPEEDS.length && localStorage.getItem(SPEED_KEY) !== null ? saved : DEFAULT_SPEED);
  applySpeed();
  ui.speed.addEventListener("input", () => {
    applySpeed();
    localStorage.setItem(SPEED_KEY, ui.speed.value);
    if (replay.playing) schedule();
  });
  ui.play.addEventListener("click", () => (replay.playing ? pause() : play()));
  ui.first.addEventListener("click", () => jump(0));
  ui.last.addEventListener("click", () => jump(replay.frames.length - 1));
  ui.back.addEventListener("click", () => step(-1));
  ui.forward.addEventListener("click", () => step(1));
  ui.seek.addEventListener("input", () => jump(Number(ui.seek.value)));
  document.addEventListener("keydown", onKey);
}

function applySpeed() {
  const speed = SPEEDS[Number(ui.speed.value)] || SPEEDS[DEFAULT_SPEED];
  setText(ui.speedValue, `${speed} ${speed === 1 ? "turn" : "turns"}/s`);
}

function intervalMs() {
  return 1000 / (SPEEDS[Number(ui.speed.value)] || SPEEDS[DEFAULT_SPEED]);
}

function play() {
  if (replay.index >= replay.frames.length - 1) jump(0);
  replay.playing = true;
  updatePlayButton();
  schedule();
}

function pause() {
  replay.playing = false;
  clearTimeout(replay.timer);
  updatePlayButton();
  rememberTurn(currentFrame());
}

function schedule() {
  clearTimeout(replay.timer);
  replay.timer = setTimeout(tick, intervalMs());
}

function tick() {
  if (!replay.playing) return;
  step(1);
  if (replay.index >= replay.frames.length - 1) pause();
  else schedule();
}

/** One turn forward (tweened, as the live view moves) or back (at once). */
function step(delta) {
  const target = Math.max(0, Math.min(replay.frames.length - 1, replay.index + delta));
  if (target === replay.index) return;
  const tweenMs = replay.playing ? Math.min(MAX_TWEEN_MS, intervalMs() * 0.8) : MAX_TWEEN_MS * 0.7;
  if (delta === 1) playback.advance(replay.frames[target], tweenMs);
  else playback.show(replay.frames[target]);
  if (replay.playing && delta !== 1) schedule();
}

function jump(index) {
  const target = Math.max(0, Math.min(replay.frames.length - 1, index));
  playback.show(replay.frames[target]);
  if (replay.playing) schedule();
}

function updatePlayButton() {
  setText(ui.playLabel, replay.playing ? "Pause" : "Play");
  ui.play.setAttribute("aria-pressed", String(replay.playing));
  show(ui.playIcon, !replay.playing);
  show(ui.pauseIcon, replay.playing);
}

function onKey(event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  const target = event.target;
  if (target instanceof Element && target.closest("input, select, textarea")) return; // sliders have their own keys
  const onButton = target instanceof Element && target.closest("button, a, summary");
  const actions = {
    ArrowLeft: () => step(-1),
    ArrowRight: () => step(1),
    Home: () => jump(0),
    End: () => jump(replay.frames.length - 1),
    " ": () => (replay.playing ? pause() : play()),
  };
  const action = actions[event.key];
  if (!action || (onButton && event.key === " ")) return; // a focused button takes its own Space
  event.preventDefault();
  action();
}

/** The turn shown goes in the address (?turn=N), so a position can be shared; not while playing. */
function rememberTurn(frame) {
  const params = new URLSearchParams(location.search);
  if (frame.index === 0) params.delete("turn");
  else params.set("turn", String(frame.turn));
  const query = params.toString();
  const address = `${location.pathname}${query ? `?${query}` : ""}`;
  if (`${location.pathname}${location.search}` !== address || location.hash) history.replaceState(null, "", address);
  ui.turnLink.href = `${location.pathname}?turn=${frame.turn}`;
  setText(ui.turnLink, `Link to ${turnWord(replay.game)} ${frame.turn}`);
}

// --- play from here --------------------------------------------------------------------------

/** A new simulation at the turn shown: its id, the line a bot joins it with, and for a game a
 * person can play in the browser a link that takes a side of it on its play page. */
async function playFromHere() {
  const frame = currentFrame();
  ui.playFromButton.disabled = true;
  show(ui.playFromError, false);
  let response = null;
  let body = null;
  try {
    response = await fetch(`/api/games/${encodeURIComponent(gameId)}/play-from?turn=${frame.turn}`, { method: "POST" });
    body = await response.json();
  } catch {
    body = null;
  } finally {
    ui.playFromButton.disabled = false;
  }
  if (!response || !response.ok || !body || !body.simulationId) {
    const why = body && body.error ? body.error : "the arena cannot be reached";
    setText(ui.playFromError, `No simulation was opened: ${why}.`);
    show(ui.playFromError, true);
    show(ui.playFromCreated, false);
    return;
  }
  const unit = turnWord(replay.game);
  setText(ui.playFromId, body.simulationId);
  setText(ui.playFromTurn, `${unit} ${body.turn + 1}, the position shown (game ${gameId}, after ${unit} ${body.turn})`);
  setText(
    ui.playFromSeed,
    `It keeps game ${gameId}'s settings and seed (${body.seed}), its random draws going on from there as that game's did: as tavern play --from ${gameId} --turn ${body.turn} plays it.`,
  );
  setText(ui.playFromJoin, JSON.stringify(body.join));
  const port = body.botPort ? ` on TCP port ${body.botPort}` : "";
  setText(ui.playFromHint, `Any bot joins it${port} by sending:`);
  ui.playFromWatch.href = `/watch/${encodeURIComponent(body.simulationId)}`;
  const play = GAMES[replay.game].play;
  if (play) ui.playFromPerson.href = `${play}?simulation=${encodeURIComponent(body.simulationId)}`;
  show(ui.playFromPerson, Boolean(play));
  setText(ui.playFromCopy, "Copy the join line");
  show(ui.playFromCreated, true);
}

async function copyJoin() {
  try {
    await navigator.clipboard.writeText(ui.playFromJoin.textContent);
    setText(ui.playFromCopy, "Copied");
  } catch {
    // Clipboard access needs a secure context; select the text so Ctrl+C works instead.
    getSelection().selectAllChildren(ui.playFromJoin);
    setText(ui.playFromCopy, "Selected: press Ctrl+C");
  }
}
