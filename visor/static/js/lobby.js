// The lobby: the simulations, live, with their age, filtered by game (?game=thud); create one
// (with the join message and a command to copy), or run a game between house players.
// Finished games link to their replay. Waiting simulations nobody joins leave the list when the
// arena drops them (waitingSimulationExpiryMs). The server sends the first rows in the lobby's
// order (games being played, then simulations with a player waiting, then empty ones, then
// finished games) for the game asked for, and counts of all: the page says how many more there
// are.

import { byId, el, setText, show } from "./dom.js";
import { GAME_NAMES, GAMES, describeResult, formatScore, gameOf, gameTitle, housePlayersFor, seatLabel } from "./games.js";
import { connectionIndicator, VisorSocket } from "./socket.js";

const ui = {
  createButtons: byId("create-buttons"),
  rulesLinks: byId("rules-links"),
  gamesIntro: byId("games-intro"),
  created: byId("created"),
  createdGame: byId("created-game"),
  createdId: byId("created-id"),
  createdSnippet: byId("created-snippet"),
  createdCommand: byId("created-command"),
  copyCommand: byId("copy-command"),
  createdWatch: byId("created-watch"),
  copyId: byId("copy-id"),
  createError: byId("create-error"),
  runForm: byId("run-form"),
  runGame: byId("run-game"),
  seats: [byId("run-seat0"), byId("run-seat1")],
  seatLabels: [byId("seat0-label"), byId("seat1-label")],
  runDelay: byId("run-delay"),
  runButton: byId("run"),
  runError: byId("run-error"),
  runPlayers: byId("run-players"),
  table: byId("sims"),
  body: byId("sims-body"),
  empty: byId("sims-empty"),
  summary: byId("sims-summary"),
  gameFilter: byId("sims-game"),
};

// What the last request was, so its answer (created or error) lands in the right place.
let pending = null; // "create" | "run" | null
let highlighted = null; // the id just created, marked in the table
let simulations = []; // the last lobby's rows, as received
let counts = {}; // the last lobby's counts: game -> status -> how many
let receivedAt = 0; // performance.now() when it arrived: ages count on from there

/** Follow the lobby of the game chosen (every game when none is). */
function askForLobby(s) {
  const game = ui.gameFilter.value;
  return s.send(game ? { type: "lobby", game } : { type: "lobby" });
}

const socket = new VisorSocket({
  onOpen: askForLobby,
  onMessage: receive,
  onStatus: connectionIndicator(byId("connection")),
});

listGames();
ui.copyId.addEventListener("click", () => copy(ui.copyId, ui.createdId, "Copy the id"));
ui.copyCommand.addEventListener("click", () => copy(ui.copyCommand, ui.createdCommand, "Copy the command"));
ui.gameFilter.value = new URLSearchParams(location.search).get("game") || ""; // unknown: every game
ui.gameFilter.addEventListener("change", () => {
  const params = new URLSearchParams(location.search);
  if (ui.gameFilter.value) params.set("game", ui.gameFilter.value);
  else params.delete("game");
  const query = params.toString();
  history.replaceState(null, "", `${location.pathname}${query ? `?${query}` : ""}`);
  renderLobby(simulations); // the rows at hand at once; the server's list of that game follows
  askForLobby(socket);
});
setInterval(updateAges, 1000);
ui.runGame.addEventListener("change", fillSeats);
for (const select of ui.seats) select.addEventListener("change", describePlayers);
ui.runForm.addEventListener("submit", (event) => {
  event.preventDefault();
  runGame();
});
fillSeats();

function receive(message) {
  if (message.type === "lobby") {
    simulations = message.simulations || [];
    counts = message.counts || {};
    receivedAt = performance.now();
    renderLobby(simulations);
  }
  else if (message.type === "created") onCreated(message);
  else if (message.type === "error") onError(message);
}

/** "a, b and c", of nodes. */
function joined(nodes) {
  return nodes.flatMap((node, i) => (i ? [i === nodes.length - 1 ? " and " : ", ", node] : [node]));
}

/** The games the arena hosts: their titles, their rules pages, a "new simulation" button each, and the
 * choices of the run form and of the list's filter. */
function listGames() {
  const links = GAME_NAMES.map((name) => el("a", { text: `the rules of ${gameTitle(name)}`, attrs: { id: `rules-${name}-link`, href: GAMES[name].rules } }));
  ui.rulesLinks.replaceChildren("How they are played: ", ...joined(links), ".");
  const titles = GAME_NAMES.map((name) => el("strong", { text: gameTitle(name) }));
  ui.gamesIntro.replaceChildren("Bots in any language play ", ...joined(titles), " over TCP.");
  ui.createButtons.replaceChildren(
    ...GAME_NAMES.map((name) => {
      const button = el("button", { className: "button", text: `New ${gameTitle(name)} simulation`, attrs: { id: `create-${name}`, type: "button" } });
      button.addEventListener("click", () => create(name));
      return button;
    }),
  );
  const options = () => GAME_NAMES.map((name) => el("option", { text: gameTitle(name), attrs: { value: name } }));
  ui.runGame.replaceChildren(...options());
  ui.gameFilter.append(...options());
}

function create(game) {
  show(ui.createError, false);
  pending = "create";
  if (!socket.send({ type: "create", game })) showError(ui.createError, "Not connected to the arena: try again in a moment.");
}

function onCreated(message) {
  if (pending === "run") {
    // The live view of the game just started.
    location.assign(`/watch/${encodeURIComponent(message.simulationId)}`);
    return;
  }
  pending = null;
  highlighted = message.simulationId;
  setText(ui.createdGame, gameTitle(message.game));
  setText(ui.createdId, message.simulationId);
  const join = { type: "join-simulation", game: message.game, nick: "my bot", simulationId: message.simulationId };
  setText(ui.createdSnippet, JSON.stringify(join));
  const command = joinCommand(message.game, message.simulationId, message.botPort);
  setText(ui.createdCommand, command);
  show(ui.createdCommand, Boolean(command));
  show(ui.copyCommand, Boolean(command));
  const hint = GAMES[message.game].houseHint;
  setText(
    byId("created-command-hint"),
    `Or let the arena's house players take the seats (${hint}), from any folder with the arena's tavern command (make run puts it in the checkout's .venv/bin; pip install puts it on the PATH):`,
  );
  show(byId("created-command-hint"), Boolean(command));
  ui.createdWatch.href = `/watch/${encodeURIComponent(message.simulationId)}`;
  setText(ui.copyId, "Copy the id");
  setText(ui.copyCommand, "Copy the command");
  show(ui.created, true);
}

/**
 * The shell command that plays one of the arena's house players into this simulation, with the
 * tavern command the arena installs (python -m ... works only in the arena's own environment):
 * the game's own (its module's houseCommands: one to run twice, or one for each side). The host
 * is the one this page came from.
 */
function joinCommand(game, simulationId, port) {
  if (!port) return "";
  const host = ["localhost", "127.0.0.1"].includes(location.hostname) ? "" : ` --host ${location.hostname}`;
  const where = `--simulation ${simulationId} --port ${port}${host}`;
  return GAMES[game].houseCommands(where).join("\n");
}

async function copy(button, source, label) {
  try {
    await navigator.clipboard.writeText(source.textContent);
    setText(button, "Copied");
    setTimeout(() => setText(button, label), 2000);
  } catch {
    // Clipboard access needs a secure context; select the text so Ctrl+C works instead.
    getSelection().selectAllChildren(source);
    setText(button, "Selected: press Ctrl+C");
  }
}

function onError(message) {
  const text = message.reason ? `${message.message}: ${message.reason}` : message.message;
  if (pending === null) {
    setText(ui.summary, text); // not about a request (e.g. "Server shutting down")
    return;
  }
  const target = pending === "run" ? ui.runError : ui.createError;
  pending = null;
  ui.runButton.disabled = false;
  showError(target, text);
}

function showError(node, text) {
  setText(node, text);
  show(node, true);
}

/** The seat selects offer only house players that can play that seat. */
function fillSeats() {
  const game = ui.runGame.value;
  const info = GAMES[game];
  const defaults = info.runDefaults;
  info.seats.forEach((seat, index) => {
    setText(ui.seatLabels[index], info.seatLabels[index]);
    const options = housePlayersFor(game, seat).map((player) =>
      el("option", { text: player.name, attrs: { value: player.name, title: player.description } }),
    );
    ui.seats[index].replaceChildren(...options);
    ui.seats[index].value = defaults[index];
  });
  describePlayers();
}

/** What the chosen house players do, under the form. */
function describePlayers() {
  const game = ui.runGame.value;
  const lines = ui.seats.map((select) => {
    const player = housePlayersFor(game, GAMES[game].seats[ui.seats.indexOf(select)]).find((p) => p.name === select.value);
    return player ? `${player.name}: ${player.description}` : "";
  });
  setText(ui.runPlayers, lines.filter(Boolean).join(" · "));
}

function runGame() {
  show(ui.runError, false);
  const delayMs = Number(ui.runDelay.value);
  if (!Number.isInteger(delayMs) || delayMs < 0 || delayMs > 10000) {
    showError(ui.runError, "The turn delay is a whole number of milliseconds, from 0 to 10000.");
    return;
  }
  pending = "run";
  const message = { type: "run-game", game: ui.runGame.value, players: ui.seats.map((s) => s.value), delayMs };
  if (socket.send(message)) ui.runButton.disabled = true;
  else showError(ui.runError, "Not connected to the arena: try again in a moment.");
}

// --- the table -------------------------------------------------------------------------------

const STATUSES = ["playing", "waiting", "finished"];
const count = (n) => n.toLocaleString("en-US");

function renderLobby(all) {
  const game = ui.gameFilter.value;
  const shown = game ? all.filter((sim) => sim.game === game) : all;
  // How many there are of each status, of the game shown (or of every game), listed or not.
  const total = Object.fromEntries(STATUSES.map((status) => [status, 0]));
  for (const [name, byStatus] of Object.entries(counts)) {
    if (game && name !== game) continue;
    for (const status of STATUSES) total[status] += byStatus[status] || 0;
  }
  const any = Object.values(counts).some((byStatus) => STATUSES.some((status) => byStatus[status]));
  show(ui.empty, shown.length === 0);
  setText(ui.empty, any && game ? `No ${gameTitle(game)} simulations right now.` : "No simulations yet. Create one, run a game, or connect a bot.");
  show(ui.table, shown.length > 0);
  const which = game ? `${gameTitle(game)}: ` : "";
  const summary = `${which}${count(total.playing)} playing · ${count(total.waiting)} waiting · ${count(total.finished)} finished`;
  // The rows not listed, by status: "and 3,912 more: 3,900 waiting, 12 finished".
  const more = STATUSES.map((status) => [status, total[status] - shown.filter((sim) => sim.status === status).length]).filter(([, n]) => n > 0);
  const unlisted = more.reduce((sum, [, n]) => sum + n, 0);
  const tail = unlisted ? ` (the first ${count(shown.length)} are listed, and ${count(unlisted)} more: ${more.map(([status, n]) => `${count(n)} ${status}`).join(", ")})` : "";
  setText(ui.summary, summary + tail);
  ui.body.replaceChildren(...shown.map(row));
}

/** "12 s", "4 min", "2 h 5 min", "3 d". */
function formatAge(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 24) return `${h} h ${min % 60} min`;
  return `${Math.floor(h / 24)} d`;
}

function ageText(sim) {
  return sim.ageMs === null || sim.ageMs === undefined ? "–" : formatAge(sim.ageMs + (performance.now() - receivedAt));
}

/** Ages count on between lobby updates (which come only when something changed). */
function updateAges() {
  const listed = new Map(simulations.map((sim) => [sim.simulationId, sim]));
  for (const cell of ui.body.querySelectorAll("td[data-label='Age']")) {
    const sim = listed.get(cell.parentElement.dataset.simulationId);
    if (sim) setText(cell, ageText(sim));
  }
}

function row(sim) {
  // A game that is over has a replay; the others are watched live.
  const finished = sim.status === "finished";
  const href = `/${finished ? "replay" : "watch"}/${encodeURIComponent(sim.simulationId)}`;
  const tr = el("tr", {
    className: `sim sim-${sim.status}${sim.simulationId === highlighted ? " sim-new" : ""}`,
    dataset: { simulationId: sim.simulationId, status: sim.status },
  });
  const cell = (label, ...children) => el("td", { dataset: { label } }, ...children);
  const info = gameOf(sim.game) || { seats: [] };
  const players = el(
    "ul",
    { className: "row-players" },
    ...info.seats.map((seat, index) => {
      const player = (sim.players || [])[index];
      return el(
        "li",
        { className: `seat-${seat}` },
        el("span", { className: "swatch", attrs: { "aria-hidden": "true", title: seatLabel(sim.game, seat) } }),
        el("span", { className: player ? "nick" : "nick free", text: player ? player.nick : "free seat" }),
        player && player.kind !== "bot" ? el("span", { className: "badge", text: player.kind }) : null,
      );
    }),
  );
  const state = el("span", { className: `status status-${sim.status}`, text: sim.status });
  const result = sim.result ? el("span", { className: "row-result", text: describeResult(sim.game, sim.result, sim.players) }) : null;
  const action = el("a", {
    className: `button button-small${finished ? " replay-link" : ""}`,
    text: finished ? "Replay" : "Watch",
    attrs: { href },
  });
  tr.append(
    cell("Id", el("a", { className: "sim-link", attrs: { href } }, el("code", { text: sim.simulationId }))),
    cell("Game", gameTitle(sim.game)),
    cell("Players", players),
    cell("State", state, result),
    cell("Score", formatScore(sim.game, sim.scores || (sim.result && sim.result.score)) || "–"),
    cell("Turn", String(sim.turn)),
    cell("Age", ageText(sim)),
    cell("Watching", String(sim.spectators)),
    el("td", { className: "row-action" }, action),
  );
  return tr;
}
