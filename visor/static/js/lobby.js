// The lobby: every simulation, live; create one, or run a game between house players.
// Finished games link to their replay.

import { byId, el, setText, show } from "./dom.js";
import { GAMES, describeResult, formatScore, gameTitle, housePlayersFor, seatLabel } from "./games.js";
import { connectionIndicator, VisorSocket } from "./socket.js";

const ui = {
  createTavern: byId("create-tavern"),
  createThud: byId("create-thud"),
  created: byId("created"),
  createdGame: byId("created-game"),
  createdId: byId("created-id"),
  createdSnippet: byId("created-snippet"),
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
};

// What the last request was, so its answer (created or error) lands in the right place.
let pending = null; // "create" | "run" | null
let highlighted = null; // the id just created, marked in the table

const socket = new VisorSocket({
  onOpen: (s) => s.send({ type: "lobby" }),
  onMessage: receive,
  onStatus: connectionIndicator(byId("connection")),
});

ui.createTavern.addEventListener("click", () => create("tavern"));
ui.createThud.addEventListener("click", () => create("thud"));
ui.copyId.addEventListener("click", copyId);
ui.runGame.addEventListener("change", fillSeats);
for (const select of ui.seats) select.addEventListener("change", describePlayers);
ui.runForm.addEventListener("submit", (event) => {
  event.preventDefault();
  runGame();
});
fillSeats();

function receive(message) {
  if (message.type === "lobby") renderLobby(message.simulations || []);
  else if (message.type === "created") onCreated(message);
  else if (message.type === "error") onError(message);
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
  ui.createdWatch.href = `/watch/${encodeURIComponent(message.simulationId)}`;
  setText(ui.copyId, "Copy the id");
  show(ui.created, true);
}

async function copyId() {
  try {
    await navigator.clipboard.writeText(ui.createdId.textContent);
    setText(ui.copyId, "Copied");
  } catch {
    // Clipboard access needs a secure context; select the id so Ctrl+C works instead.
    getSelection().selectAllChildren(ui.createdId);
    setText(ui.copyId, "Selected: press Ctrl+C");
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
  const defaults = game === "thud" ? ["dwarf", "troll"] : ["pusher", "wanderer"];
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

function renderLobby(simulations) {
  show(ui.empty, simulations.length === 0);
  show(ui.table, simulations.length > 0);
  const counts = { waiting: 0, playing: 0, finished: 0 };
  for (const sim of simulations) counts[sim.status] = (counts[sim.status] || 0) + 1;
  setText(ui.summary, `${counts.playing} playing · ${counts.waiting} waiting · ${counts.finished} finished`);
  ui.body.replaceChildren(...simulations.map(row));
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
  const info = GAMES[sim.game] || { seats: [] };
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
    cell("Watching", String(sim.spectators)),
    el("td", { className: "row-action" }, action),
  );
  return tr;
}
