// /clients: write a Thud challenge client, validate it, and play it as an arena seat.
//
// The editor is CodeMirror 5 (vendored in static/vendor/codemirror, loaded before this module):
// line numbers, JavaScript highlighting, long lines scroll; the controller's API is listed
// beside it. The clients are kept in localStorage (clients-store.js). A client's code never runs in this
// page: each game gets a fresh Web Worker holding it (clients-worker.js, with the controller the
// Node adapter uses), and a websocket of its own that takes a seat in the arena with the `play`
// message; the page relays the seat's turns to the worker and its moves back
// (clients-runner.js). The arena referees every move, as for any bot.
//
// Validate runs the challenge's checks: the source evaluates, yields a class constructed with
// the controller, has turn() and end_turn(), uses no forbidden term, and plays a whole game
// against each house player of the other side without an illegal move.

import { ClientStore, STARTER, STORAGE_KEY, cleanName, fileName, fingerprint } from "./clients-store.js";
import { ClientSandbox, SeatGame, playable } from "./clients-runner.js";
import { byId, el, setText, show } from "/static/js/dom.js";
import { formatScore, gameOf, seatLabel, square } from "/static/js/games.js";
import { logEntries, MoveList, renderScoreboard } from "/static/js/panel.js";
import { Playback } from "/static/js/playback.js";
import { connectionIndicator, socketUrl, VisorSocket } from "/static/js/socket.js";
import { ThudView } from "./view.js";

const OTHER = { dwarf: "troll", troll: "dwarf" };
const MAX_CONSOLE = 300;
const DELETE_ARM_MS = 4000;

const ui = {
  list: byId("client-list"),
  newClient: byId("new-client"),
  openFile: byId("open-file"),
  name: byId("client-name"),
  sides: document.querySelectorAll('input[name="side"]'),
  download: byId("download-client"),
  remove: byId("delete-client"),
  source: byId("source"),
  saveStatus: byId("save-status"),
  validate: byId("validate"),
  opponent: byId("opponent"),
  run: byId("run"),
  stop: byId("stop"),
  limit: byId("think-limit"),
  results: byId("results"),
  checksClient: byId("checks-client"),
  verdict: byId("verdict"),
  checks: byId("checks"),
  games: byId("games"),
  progressBox: byId("progress-box"),
  progress: byId("progress"),
  progressText: byId("progress-text"),
  gameCard: byId("game-card"),
  simId: byId("sim-id"),
  turnStatus: byId("turn-status"),
  watchLink: byId("watch-link"),
  waitBot: byId("wait-bot"),
  waitSide: byId("wait-side"),
  waitId: byId("wait-id"),
  waitSnippet: byId("wait-snippet"),
  canvas: byId("board"),
  players: byId("players"),
  ply: byId("ply"),
  result: byId("result"),
  log: byId("log"),
  console: byId("console"),
};

const store = new ClientStore(localStorage);
let house = gameOf("thud").house; // replaced by the arena's own list when the lobby arrives
let busy = null; // {kind: "validate" | "seat", stopped, game, sandbox}
let deleteTimer = 0;

// --- the shelf and the editor ----------------------------------------------------------------

/** What a validation verdict holds for: this source, playing this side. */
function versionOf(client) {
  return fingerprint(`${client.side}\n${client.source}`);
}

/** The verdict of the last validation, if it was of the client as it is now. */
function checkedNow(client) {
  return client.checked && client.checked.hash === versionOf(client) ? client.checked : null;
}

function renderList() {
  const items = store.clients.map((client) => {
    const checked = checkedNow(client);
    const current = client.id === store.selectedId;
    const button = el(
      "button",
      {
        className: "client-item",
        attrs: { type: "button", "aria-current": current ? "true" : null },
        dataset: { clientId: client.id },
      },
      el("span", { className: "swatch side-swatch-" + client.side, attrs: { "aria-hidden": "true" } }),
      el("span", { className: "client-item-name", text: client.name }),
      checked ? el("span", { className: checked.ok ? "badge badge-valid" : "badge badge-invalid", text: checked.ok ? "valid" : "fails" }) : null,
    );
    button.addEventListener("click", () => selectClient(client.id));
    return el("li", {}, button);
  });
  ui.list.replaceChildren(...items);
}

function selectClient(id) {
  store.select(id);
  disarmDelete();
  loadEditor();
}

/**
 * The code editor over the #source textarea, which it keeps up to date (so the textarea always
 * holds the source, as forms and tools expect).
 */
const editor = CodeMirror.fromTextArea(ui.source, {
  mode: "javascript",
  theme: "tavern",
  lineNumbers: true,
  lineWrapping: false,
  matchBrackets: true,
  indentUnit: 2,
  tabSize: 2,
  indentWithTabs: false,
  viewportMargin: 50,
  extraKeys: {
    Tab: (cm) => (cm.somethingSelected() ? cm.indentSelection("add") : cm.replaceSelection("  ", "end")),
    "Shift-Tab": (cm) => cm.indentSelection("subtract"),
    // The keyboard's way out of the editor (Tab indents inside it).
    Esc: () => ui.validate.focus(),
  },
});
editor.getWrapperElement().setAttribute("aria-label", "Client source");
editor.getInputField().setAttribute("aria-describedby", "editor-keys");
let loading = false; // setValue while loading a client is not an edit

function loadEditor() {
  const client = store.selected;
  ui.name.value = client.name;
  for (const radio of ui.sides) radio.checked = radio.value === client.side;
  loading = true;
  editor.setValue(client.source);
  editor.clearHistory(); // undo stays within one client
  editor.save();
  loading = false;
  fillOpponents();
  renderList();
  updateSaveStatus();
}

function currentSide() {
  const checked = [...ui.sides].find((radio) => radio.checked);
  return checked ? checked.value : "dwarf";
}

function updateSaveStatus() {
  const client = store.selected;
  if (store.error) {
    setText(ui.saveStatus, `This browser refused to save: ${store.error.message || store.error}. Download the client to keep it.`);
    ui.saveStatus.classList.add("error");
    return;
  }
  ui.saveStatus.classList.remove("error");
  const checked = checkedNow(client);
  const state = checked ? (checked.ok ? "This version passed validation." : "This version failed validation.") : "Not validated since the last change.";
  setText(ui.saveStatus, `Saved in this browser. ${state}`);
}

function setupEditor() {
  ui.name.addEventListener("input", () => {
    const name = cleanName(ui.name.value);
    if (!name) return; // keep the last good name until there is a new one
    store.update(store.selectedId, { name: store.uniqueName(name, store.selectedId) });
    renderList();
    updateSaveStatus();
  });
  ui.name.addEventListener("change", () => {
    ui.name.value = store.selected.name; // shows the name actually kept (trimmed, made unique)
  });
  for (const radio of ui.sides) {
    radio.addEventListener("change", () => {
      store.update(store.selectedId, { side: currentSide() });
      fillOpponents();
      renderList();
      updateSaveStatus();
    });
  }
  editor.on("changes", () => {
    editor.save();
    if (loading) return;
    store.update(store.selectedId, { source: editor.getValue() });
    renderList();
    updateSaveStatus();
  });
  ui.newClient.addEventListener("click", () => {
    const side = currentSide();
    store.add({ name: `my_${side}`, side, source: STARTER });
    loadEditor();
    ui.name.focus();
    ui.name.select();
  });
  ui.openFile.addEventListener("change", async () => {
    const file = ui.openFile.files && ui.openFile.files[0];
    ui.openFile.value = "";
    if (!file) return;
    const source = await file.text();
    const lower = file.name.toLowerCase();
    const side = lower.includes("troll") ? "troll" : lower.includes("dwarf") ? "dwarf" : currentSide();
    store.add({ name: file.name.replace(/\.js$/i, ""), side, source });
    loadEditor();
  });
  ui.download.addEventListener("click", downloadClient);
  ui.remove.addEventListener("click", () => {
    if (ui.remove.dataset.armed !== "true") {
      ui.remove.dataset.armed = "true";
      setText(ui.remove, "Delete? Click again");
      deleteTimer = setTimeout(disarmDelete, DELETE_ARM_MS);
      return;
    }
    disarmDelete();
    store.remove(store.selectedId);
    loadEditor();
  });
}

function disarmDelete() {
  clearTimeout(deleteTimer);
  delete ui.remove.dataset.armed;
  setText(ui.remove, "Delete");
}

function downloadClient() {
  const client = store.selected;
  const url = URL.createObjectURL(new Blob([client.source], { type: "text/javascript" }));
  const link = el("a", { attrs: { href: url, download: fileName(client.name) } });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

function opponentsFor(side) {
  return house.filter((player) => player.sides.includes(OTHER[side]));
}

function fillOpponents() {
  const side = currentSide();
  const before = ui.opponent.value;
  const options = opponentsFor(side).map((player) =>
    el("option", { text: `House ${player.name}: ${player.description}`, attrs: { value: player.name } }),
  );
  options.push(el("option", { text: "Wait for a bot to join by id", attrs: { value: "" } }));
  ui.opponent.replaceChildren(...options);
  const names = options.map((option) => option.value);
  ui.opponent.value = names.includes(before) && ui.opponent.dataset.side === side ? before : names.includes(OTHER[side]) ? OTHER[side] : names[0];
  ui.opponent.dataset.side = side;
}

// --- running ---------------------------------------------------------------------------------

function limitMs() {
  const seconds = Number(ui.limit.value);
  return Math.round((Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 120) : 10) * 1000);
}

function setBusy(next) {
  busy = next;
  ui.validate.disabled = Boolean(busy);
  ui.run.disabled = Boolean(busy);
  show(ui.stop, Boolean(busy));
  ui.stop.disabled = false;
}

/** A fresh worker for the job; `label` tells games apart in the console when they overlap. */
function newSandbox(job, label = "") {
  const prefix = label ? `[${label}] ` : "";
  const sandbox = new ClientSandbox({
    onConsole: (text, level) => consoleLine(prefix + text, level),
    onWarn: (text) => consoleLine(`${prefix}controller: ${text}`, "warn"),
  });
  job.sandboxes.push(sandbox);
  return sandbox;
}

function consoleLine(text, level) {
  ui.console.append(el("li", { className: `console-${level}`, text }));
  while (ui.console.children.length > MAX_CONSOLE) ui.console.firstElementChild.remove();
  ui.console.scrollTop = ui.console.scrollHeight;
}

function snapshotClient() {
  const client = store.selected;
  return { id: client.id, name: client.name, side: client.side, source: client.source, nick: client.name.slice(0, 64) || "client" };
}

function newJob(kind) {
  return { kind, stopped: false, games: [], sandboxes: [] };
}

ui.stop.addEventListener("click", () => {
  if (!busy) return;
  busy.stopped = true;
  ui.stop.disabled = true;
  for (const game of busy.games) game.stop();
  for (const sandbox of busy.sandboxes) sandbox.terminate();
});

// --- validation ------------------------------------------------------------------------------

function checkItem(name) {
  return ui.checks.querySelector(`li[data-check="${name}"]`);
}

const VERDICTS = { idle: "", running: "checking…", pass: "pass", fail: "fail", skip: "not run" };

/** Set a check's state and detail; `detail` is text, or nodes (every name as text). */
function markCheck(name, state, ...detail) {
  const item = checkItem(name);
  item.dataset.state = state;
  setText(item.querySelector(".check-verdict"), VERDICTS[state]);
  item.querySelector(".check-detail").replaceChildren(...detail.filter(Boolean).map((part) => (typeof part === "string" ? el("p", { text: part }) : part)));
}

function stackBlock(error) {
  const text = error.stack && error.stack.includes(error.message) ? error.stack : `${error.name}: ${error.message}\n${error.stack || ""}`;
  return el("pre", { className: "stack", text: text.trim() });
}

function resetChecks(name) {
  for (const check of ["evaluates", "klass", "methods", "terms", "games"]) markCheck(check, "idle");
  ui.games.replaceChildren();
  setText(ui.checksClient, name);
  show(ui.progressBox, false);
}

function setVerdict(state, text) {
  ui.verdict.dataset.verdict = state;
  setText(ui.verdict, text);
}

function showStaticChecks(checks) {
  const { evaluates, klass, methods, terms } = checks;
  if (evaluates.ok) markCheck("evaluates", "pass");
  else markCheck("evaluates", "fail", "Evaluating the code threw:", stackBlock(evaluates.error));
  if (klass.ok === null) markCheck("klass", "skip");
  else if (klass.ok) markCheck("klass", "pass", klass.detail);
  else markCheck("klass", "fail", klass.detail, klass.error ? stackBlock(klass.error) : null);
  if (methods.ok === null) markCheck("methods", "skip");
  else if (methods.ok) markCheck("methods", "pass");
  else markCheck("methods", "fail", `Instances have ${methods.detail}.`);
  if (terms.ok) markCheck("terms", "pass");
  else {
    const found = terms.terms.map((t) => `${t.term} (line ${t.line})`).join(", ");
    markCheck("terms", "fail", `The source contains ${found}; the challenge forbids it.`);
  }
}

function allPass(checks) {
  return Object.values(checks).every((check) => check.ok);
}

async function validate() {
  if (busy) return;
  const client = snapshotClient();
  const limit = limitMs();
  const opponents = opponentsFor(client.side);
  const job = newJob("validate");
  setBusy(job);
  ui.results.dataset.mode = "validate"; // the checks first, the board of a game below
  show(ui.gameCard, false); // until its first game starts
  resetChecks(client.name);
  ui.console.replaceChildren();
  setVerdict("running", `Validating ${client.name}…`);
  for (const check of ["evaluates", "klass", "methods", "terms"]) markCheck(check, "running");

  const first = newSandbox(job, opponents.length > 1 ? `vs ${opponents[0].name}` : "");
  const loaded = await first.load(client.source, client.side, client.name, limit);
  if (loaded.type === "loaded") showStaticChecks(loaded.checks);
  else {
    const why = loaded.type === "timeout" ? `Loading it ran longer than ${limit / 1000} s (an endless loop?); it was stopped.` : "Stopped.";
    markCheck("evaluates", "fail", why);
    for (const check of ["klass", "methods", "terms"]) markCheck(check, "skip");
  }
  if (loaded.type !== "loaded" || !allPass(loaded.checks)) {
    first.terminate();
    markCheck("games", "skip", job.stopped ? "Stopped." : "Not played: the client must pass the checks above first.");
    return finishValidation(client, false, job);
  }

  // Every game at once, each with its own instance of the client (as each game of the challenge
  // constructed its clients), in its own worker, on its own socket.
  const side = seatLabel("thud", OTHER[client.side]).toLowerCase();
  markCheck("games", "running", `One game against each house player of the ${side}, in the arena.`);
  const plies = opponents.map(() => 0);
  const maxPlies = () => (view.board && view.board.maxPlies) || 500;
  const progress = () => {
    const played = plies.reduce((sum, ply) => sum + Math.min(ply, maxPlies()), 0);
    ui.progress.value = played / (maxPlies() * opponents.length);
    setText(ui.progressText, `Playing ${opponents.length} game${opponents.length === 1 ? "" : "s"}: ${plies.map((ply) => `ply ${ply}`).join(", ")} of ${maxPlies()}`);
  };
  show(ui.progressBox, true);
  progress();
  const runs = opponents.map(async (player, index) => {
    const item = el("li", { dataset: { opponent: player.name, state: "running" } }, el("span", { className: "game-name", text: `House ${player.name}` }), el("span", { className: "game-verdict", text: "starting…" }));
    ui.games.append(item);
    let sandbox = first;
    if (index > 0) {
      sandbox = newSandbox(job, `vs ${player.name}`);
      const again = await sandbox.load(client.source, client.side, client.name, limit);
      if (again.type !== "loaded" || !playable(again.checks)) {
        sandbox.terminate();
        const failure = { kind: "join", text: "The client did not load again for this game." };
        gameVerdict(item, { status: job.stopped ? "stopped" : "failed", failure }, client, 0);
        return false;
      }
    }
    if (job.stopped) {
      gameVerdict(item, { status: "stopped" }, client, 0);
      return false;
    }
    const outcome = await playGame(job, sandbox, client, player.name, limit, index === 0, (ply) => {
      plies[index] = ply;
      setText(item.querySelector(".game-verdict"), `playing… ply ${ply}`);
      progress();
    });
    gameVerdict(item, outcome, client, plies[index]);
    return outcome.status === "finished";
  });
  const ok = (await Promise.all(runs)).every(Boolean);
  show(ui.progressBox, false);
  if (job.stopped) markCheck("games", "skip", "Stopped before every game was played.");
  else if (ok) markCheck("games", "pass", `Every game against the house ${side} played to its end.`);
  else markCheck("games", "fail", "A game did not reach its end: see below.");
  return finishValidation(client, ok && !job.stopped, job);
}

function finishValidation(client, ok, job) {
  setBusy(null);
  if (job.stopped) setVerdict("none", `Validation of ${client.name} stopped.`);
  else if (ok) setVerdict("pass", `${client.name} is valid: it passes every check.`);
  else setVerdict("fail", `${client.name} is not valid: see the failed checks.`);
  if (!job.stopped) {
    // Remembered with the exact source it was run on, so an edit shows it needs validating again.
    store.update(client.id, { checked: { hash: versionOf(client), ok } });
    renderList();
    if (store.selectedId === client.id) updateSaveStatus();
  }
}

function gameVerdict(item, outcome, client, plies) {
  const state = outcome.status === "finished" ? "pass" : outcome.status === "stopped" ? "skip" : "fail";
  item.dataset.state = state;
  const verdict = item.querySelector(".game-verdict");
  if (outcome.status === "finished") setText(verdict, resultLine(outcome, client, plies));
  else if (outcome.status === "stopped") setText(verdict, "stopped");
  else setText(verdict, failureText(outcome.failure, client.name));
  if (outcome.simulationId) {
    item.append(" ", el("a", { className: "game-watch", text: "watch", attrs: { href: `/watch/${encodeURIComponent(outcome.simulationId)}` } }));
  }
  if (outcome.failure && outcome.failure.kind === "threw") item.append(stackBlock(outcome.failure.error));
}

// --- one game in a seat ----------------------------------------------------------------------

/**
 * Play one game with a loaded sandbox. When `shown`, the board and the panel follow it; either
 * way `onPly` hears how far it has got.
 */
function playGame(job, sandbox, client, opponent, limit, shown, onPly) {
  if (shown) startView(client, opponent);
  const game = new SeatGame({
    sandbox,
    side: client.side,
    opponent,
    nick: client.nick,
    limitMs: limit,
    hooks: {
      onSeated: (message) => shown && seated(message),
      onWatch: (message) => {
        if (shown) watched(message);
        if (message.state && onPly) onPly(Math.max(0, message.state.ply - 1));
      },
      onNotice: (text) => shown && moveList.note({ kind: "timeout", turn: "!", text }),
    },
  });
  job.games.push(game);
  if (job.stopped) game.stop();
  return game.done.then((outcome) => {
    if (shown) finishView(outcome, client, job.kind === "seat");
    return outcome;
  });
}

async function runSeat() {
  if (busy) return;
  const client = snapshotClient();
  const limit = limitMs();
  const opponent = ui.opponent.value || null;
  const job = newJob("seat");
  setBusy(job);
  ui.results.dataset.mode = "seat"; // the game first
  ui.console.replaceChildren();
  startView(client, opponent);
  setText(ui.turnStatus, `Loading ${client.name}…`);
  const sandbox = newSandbox(job);
  const loaded = await sandbox.load(client.source, client.side, client.name, limit);
  if (loaded.type !== "loaded" || !playable(loaded.checks)) {
    sandbox.terminate();
    if (job.stopped) showResult("Stopped.", "", "");
    else showResult(`${client.name} cannot play.`, loadProblem(loaded, limit), "");
    setText(ui.turnStatus, "Not started.");
    setText(ui.simId, "");
    setBusy(null);
    return;
  }
  if (!loaded.checks.terms.ok) {
    const terms = loaded.checks.terms.terms.map((t) => t.term).join(", ");
    consoleLine(`note: the source uses ${terms}, which the challenge forbids; it plays anyway.`, "warn");
  }
  await playGame(job, sandbox, client, opponent, limit, true, null);
  setBusy(null);
}

function loadProblem(loaded, limit) {
  if (loaded.type === "timeout") return `Loading it ran longer than ${limit / 1000} s (an endless loop?).`;
  if (loaded.type !== "loaded") return "Stopped.";
  const { evaluates, klass, methods } = loaded.checks;
  if (!evaluates.ok) return `Evaluating the code threw ${evaluates.error.name}: ${evaluates.error.message}`;
  if (!klass.ok) return klass.error ? `${klass.detail}: ${klass.error.name}: ${klass.error.message}` : klass.detail;
  return `Instances have ${methods.detail}. Validate shows every check.`;
}

// --- the game's view -------------------------------------------------------------------------

const view = {
  client: null,
  opponent: null,
  side: null,
  simulationId: null,
  status: "waiting",
  players: [],
  board: null,
  thud: null,
  shown: null,
};

const moveList = new MoveList(ui.log);

const playback = new Playback(
  (from, to, t) => view.thud && view.thud.render(from, to, t),
  (frame) => frameShown(frame),
);
playback.durationMs = 120;

function startView(client, opponent) {
  playback.cancel();
  Object.assign(view, { client, opponent, side: client.side, simulationId: null, status: "waiting", players: [], shown: null });
  show(ui.gameCard, true);
  show(ui.result, false);
  show(ui.waitBot, false);
  moveList.clear();
  setText(ui.simId, "…");
  setText(ui.ply, "–");
  ui.watchLink.href = "/";
  setText(ui.watchLink, "…");
  setText(ui.turnStatus, `Seating ${client.name}…`);
  renderScoreboard(ui.players, { game: "thud", players: [], scores: null, toMove: null, declared: null, you: client.side });
  if (view.thud) {
    view.thud.redraw();
  }
}

function seated(message) {
  view.simulationId = message.simulationId;
  setText(ui.simId, message.simulationId);
  const path = `/watch/${encodeURIComponent(message.simulationId)}`;
  ui.watchLink.href = path;
  setText(ui.watchLink, `/watch/${message.simulationId}`);
  updateStatus();
}

function watched(message) {
  if (message.simulationId && view.simulationId && message.simulationId !== view.simulationId) return;
  switch (message.type) {
    case "snapshot":
      view.players = message.players || [];
      view.status = message.status;
      if (!view.thud) {
        view.board = message.board;
        view.thud = new ThudView(ui.canvas, message.board);
      }
      if (message.state) playback.show({ state: message.state, scores: message.scores, snapshot: true });
      else renderPanel(null);
      break;
    case "turn":
      view.status = "playing";
      playback.advance({ state: message.state, scores: message.scores, events: message.events, turn: message.turn, seat: message.seat, timedOut: message.timedOut });
      break;
    case "left":
      moveList.note({ kind: "timeout", turn: "!", text: `${message.nick || "A player"} left the game` });
      break;
    case "end":
      view.status = "finished";
      if (message.state) playback.show({ state: message.state, scores: message.result && message.result.score, snapshot: true });
      break;
    default:
      break;
  }
  updateStatus();
}

function frameShown(frame) {
  view.shown = frame;
  renderPanel(frame);
  if (frame.events) moveList.add(frame.turn, logEntries("thud", frame, view.players));
}

function renderPanel(frame) {
  const state = frame && frame.state;
  renderScoreboard(ui.players, {
    game: "thud",
    players: view.players,
    scores: frame ? frame.scores || (state && state.score) : null,
    toMove: state && view.status === "playing" ? state.side : null,
    declared: state ? state.declared : null,
    you: view.side,
  });
  setText(ui.ply, state ? `${Math.max(0, state.ply - 1)} of ${view.board ? view.board.maxPlies : 500}` : "–");
}

function updateStatus() {
  const waiting = view.status === "waiting" && view.simulationId && !view.opponent;
  show(ui.waitBot, Boolean(waiting));
  if (waiting) {
    const other = OTHER[view.side];
    setText(ui.waitSide, seatLabel("thud", other).toLowerCase());
    setText(ui.waitId, view.simulationId);
    setText(ui.waitSnippet, JSON.stringify({ type: "join-simulation", game: "thud", nick: "my bot", side: other, simulationId: view.simulationId }));
  }
  if (view.status === "finished") return;
  const state = view.shown && view.shown.state;
  let text;
  if (view.status === "waiting") text = view.opponent ? "Starting…" : "Waiting for a bot to join…";
  else if (state && state.side === view.side) text = `${view.client.name} is thinking…`;
  else text = `The ${seatLabel("thud", OTHER[view.side]).toLowerCase()} are thinking…`;
  setText(ui.turnStatus, text);
}

function resultWord(outcome, side) {
  if (outcome.seatType === "win-game") return "won";
  if (outcome.seatType === "loss-game") return "lost";
  if (outcome.seatType === "draw-game") return "drew";
  const winner = outcome.result && outcome.result.winner;
  return !winner ? "drew" : winner === side ? "won" : "lost";
}

function resultLine(outcome, client, plies) {
  const result = outcome.result || {};
  const score = formatScore("thud", result.score);
  return `${resultWord(outcome, client.side)}${score ? ` ${score}` : ""} after ${plies} plies (${result.reason})`;
}

function failureText(failure, name) {
  switch (failure.kind) {
    case "threw":
      return `${name} threw on ply ${failure.ply}: ${failure.error.name}: ${failure.error.message}`;
    case "no-move": {
      const score = failure.score ? ` (dwarfs ${failure.score.dwarfs}, trolls ${failure.score.trolls})` : "";
      return `On ply ${failure.ply}, turn() returned without a move: the game stopped there, scored as it stood${score}, as the challenge's engine did.`;
    }
    case "timeout":
      return `On ply ${failure.ply}, ${name} ran longer than ${failure.limitMs / 1000} s (an endless loop?), so it was stopped.`;
    case "illegal": {
      const move = failure.move ? `${square(failure.move.from)} → ${square(failure.move.to)} on ply ${failure.move.ply}` : "a move";
      return `The arena refused ${move}: ${failure.text}${failure.reason ? ` (${failure.reason})` : ""}.`;
    }
    default:
      return failure.text;
  }
}

function finishView(outcome, client, withStack) {
  view.status = "finished";
  renderPanel(view.shown); // nobody is on move any more
  if (outcome.status === "finished") {
    const word = resultWord(outcome, client.side);
    const headline = `${client.name} ${word}.`;
    const score = formatScore("thud", outcome.result && outcome.result.score);
    showResult(headline, outcome.result ? outcome.result.reason : "", score ? `Dwarfs – trolls: ${score}` : "");
    setText(ui.turnStatus, "Game over.");
  } else if (outcome.status === "stopped") {
    showResult("Stopped.", view.simulationId ? "The client left the game, which forfeits it." : "", "");
    setText(ui.turnStatus, "Game over.");
  } else {
    const left = view.simulationId && outcome.failure.kind !== "join" && outcome.failure.kind !== "connection" ? "It left the game, which the arena scores as a loss." : "";
    showResult(`${client.name} could not go on.`, failureText(outcome.failure, client.name), left);
    // (Validation shows the stack with each game's verdict.)
    if (outcome.failure.kind === "threw" && withStack) ui.result.append(stackBlock(outcome.failure.error));
    setText(ui.turnStatus, "Game over.");
  }
  show(ui.waitBot, false);
}

function showResult(headline, reason, detail) {
  ui.result.replaceChildren(el("strong", { text: headline }));
  if (reason) ui.result.append(el("span", { className: "result-reason", text: reason }));
  if (detail) ui.result.append(el("span", { className: "result-score", text: detail }));
  show(ui.result, true);
}

// --- start -----------------------------------------------------------------------------------

/**
 * The arena's house players, from one lobby message on a socket of its own (the page's socket
 * does not subscribe to the lobby, which would stream every change of every game).
 */
function fetchHouse() {
  const ws = new WebSocket(socketUrl());
  ws.addEventListener("open", () => ws.send(JSON.stringify({ type: "lobby" })));
  ws.addEventListener("message", (event) => {
    let message = null;
    try {
      message = JSON.parse(event.data);
    } catch {
      return;
    }
    if (!message || message.type !== "lobby") return;
    ws.close();
    if (message.house && Array.isArray(message.house.thud)) {
      const known = JSON.stringify(house);
      house = message.house.thud;
      if (JSON.stringify(house) !== known) fillOpponents();
    }
  });
}

// The page's socket shows the connection; each game has a socket of its own (clients-runner.js).
new VisorSocket({
  onOpen: () => fetchHouse(),
  onMessage: () => {},
  onStatus: connectionIndicator(byId("connection")),
});

// Another tab changed the shelf: show what is stored now.
window.addEventListener("storage", (event) => {
  if (event.key !== STORAGE_KEY || event.storageArea !== localStorage) return;
  store.reload();
  loadEditor();
});

setupEditor();
loadEditor();
ui.validate.addEventListener("click", () => validate());
ui.run.addEventListener("click", () => runSeat());
