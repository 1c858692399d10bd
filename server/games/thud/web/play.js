// /play/thud: a person takes a Thud side in the browser, against a house player or a bot (one
// that joins by id, or whichever seeking bot the arena pairs them with: "Find an opponent").
//
// The page watches its own game like any spectator (snapshot, turn, end) and also receives
// what a bot in its seat would (`seat` messages: game-info, turn with every legal move, error,
// and the final win/loss/draw). Moves are checked by the server, never only here.

import { byId, el, setText, show } from "/static/js/dom.js";
import { describeResult, formatScore, housePlayersFor, seatLabel, square } from "/static/js/games.js";
import { logEntries, MoveList, renderBankClocks, renderScoreboard } from "/static/js/panel.js";
import { Playback } from "/static/js/playback.js";
import { connectionIndicator, VisorSocket } from "/static/js/socket.js";
import { key, ThudView } from "./view.js";

const NICK_KEY = "visor.nick";
/** /play/thud?simulation=ID (a replay's "Play from here" links it): the opponent list offers
 * that simulation first, to take a side of it as a bot joining by id would. */
const JOINING = new URLSearchParams(location.search).get("simulation");
const JOIN = "join"; // the opponent option that joins JOINING
const OTHER = { dwarf: "troll", troll: "dwarf" };

const ui = {
  setup: byId("setup"),
  form: byId("setup-form"),
  opponent: byId("opponent"),
  opponentAbout: byId("opponent-about"),
  nick: byId("nick"),
  start: byId("start"),
  seek: byId("seek"),
  seeking: byId("seeking"),
  cancelSeek: byId("cancel-seek"),
  setupError: byId("setup-error"),
  game: byId("game"),
  canvas: byId("board"),
  banner: byId("banner"),
  simId: byId("sim-id"),
  turnStatus: byId("turn-status"),
  waitBot: byId("wait-bot"),
  waitSide: byId("wait-side"),
  waitId: byId("wait-id"),
  waitSnippet: byId("wait-snippet"),
  players: byId("players"),
  ply: byId("ply"),
  clockFact: byId("clock-fact"),
  clock: byId("clock"),
  watchLink: byId("watch-link"),
  moveInfo: byId("move-info"),
  error: byId("play-error"),
  peace: byId("peace"),
  peaceStatus: byId("peace-status"),
  result: byId("result"),
  again: byId("again"),
  log: byId("log"),
};

let game = freshGame();

function freshGame() {
  return {
    phase: "setup", // setup -> joining (or seeking) -> playing -> over
    side: null,
    opponent: null,
    simulationId: null,
    players: [],
    status: "waiting",
    view: null,
    board: null,
    shown: null, // the frame on the board
    myTurn: false,
    turn: null, // the number of the turn we are on: our move names it, so a late one is refused
    moves: [], // the legal moves of the turn we are on
    selected: null,
    hover: null,
    peace: false, // the person wants the declare flag set
    result: null,
    clock: null, // a game with a time bank: the server's clock, and since when (performance.now())
  };
}

const moveList = new MoveList(ui.log);

const playback = new Playback(
  (from, to, t) => game.view && game.view.render(from, to, t),
  (frame) => frameShown(frame),
);
playback.durationMs = 250;

const socket = new VisorSocket({
  onOpen: (_socket, reconnected) => {
    if (reconnected && game.phase === "seeking") {
      // So does a seek: the arena withdrew it with the connection.
      backToSetup();
      showSetupError("The connection to the arena was lost, so the search was stopped: try again.");
    } else if (reconnected && (game.phase === "playing" || game.phase === "joining")) {
      // A seat belongs to a connection: when it drops, the arena counts it as leaving.
      endLocally("The connection to the arena was lost, so this seat was given up.");
    }
  },
  onMessage: receive,
  onStatus: connectionIndicator(byId("connection")),
});

setupForm();
setupBoard();
ui.peace.addEventListener("click", togglePeace);
ui.again.addEventListener("click", () => {
  playback.cancel();
  // The board is the same for every game: keep its view, forget everything else.
  const { view, board } = game;
  game = { ...freshGame(), view, board };
  if (view) view.setOverlay({ movable: [], focus: null, moves: [], selected: null, hover: null });
  moveList.clear();
  show(ui.game, false);
  show(ui.setup, true);
  backToSetup();
});
ui.seek.addEventListener("click", seekOpponent);
setInterval(showClock, 100);
ui.cancelSeek.addEventListener("click", () => {
  // The page stays seeking until the arena says the seek is withdrawn (or paired meanwhile).
  if (socket.send({ type: "cancel-seek" })) ui.cancelSeek.disabled = true;
});

// --- setup -----------------------------------------------------------------------------------

function chosenSide() {
  return ui.form.elements.side.value;
}

function setupForm() {
  const saved = localStorage.getItem(NICK_KEY);
  if (saved) ui.nick.value = saved;
  // Short options (a phone's select is as wide as its longest one); what the chosen one does
  // goes under it, where it can wrap.
  const fillOpponents = () => {
    const other = OTHER[chosenSide()];
    const options = housePlayersFor("thud", other).map((player) =>
      el("option", { text: `House ${player.name}`, attrs: { value: player.name } }),
    );
    options.push(el("option", { text: "Wait for a bot to join by id", attrs: { value: "" } }));
    if (JOINING) options.unshift(el("option", { text: `Simulation ${JOINING}`, attrs: { value: JOIN } }));
    ui.opponent.replaceChildren(...options);
    ui.opponent.value = JOINING ? JOIN : other; // else the specialist house player for that side
    describeOpponent();
  };
  const describeOpponent = () => {
    const player = housePlayersFor("thud", OTHER[chosenSide()]).find((p) => p.name === ui.opponent.value);
    const joining = `take a side of simulation ${JOINING}, which a bot joins by id`;
    const other = ui.opponent.value === JOIN ? joining : "once you start, this page shows the id it joins with";
    setText(ui.opponentAbout, player ? `${player.name}: ${player.description}` : other);
  };
  for (const radio of ui.form.elements.side) radio.addEventListener("change", fillOpponents);
  ui.opponent.addEventListener("change", describeOpponent);
  fillOpponents();
  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    const nick = chosenNick();
    const side = chosenSide();
    const joining = ui.opponent.value === JOIN;
    const opponent = joining ? null : ui.opponent.value || null;
    // A simulation joined by id has its own clock (or none).
    const request = { type: "play", game: "thud", side, opponent, nick, clock: joining ? null : chosenClock() };
    if (joining) request.simulationId = JOINING;
    if (!socket.send(request)) {
      showSetupError("Not connected to the arena: try again in a moment.");
      return;
    }
    game.phase = "joining";
    game.side = side;
    game.opponent = opponent;
    setSetupEnabled(false);
  });
}

/** The time bank chosen for the game ("INITIAL+INCREMENT" in ms), or null: no clock. */
function chosenClock() {
  const [initialMs, incrementMs] = ui.form.elements.clock.value.split("+").map(Number);
  return initialMs ? { initialMs, incrementMs } : null;
}

function chosenNick() {
  const nick = ui.nick.value.trim() || "player";
  localStorage.setItem(NICK_KEY, nick);
  show(ui.setupError, false);
  return nick;
}

/** Seek an unrated game as a guest: the arena pairs the page with a seeking bot, and the
 * side is the pairing's. */
function seekOpponent() {
  if (!socket.send({ type: "seek", game: "thud", nick: chosenNick() })) {
    showSetupError("Not connected to the arena: try again in a moment.");
    return;
  }
  game.phase = "seeking";
  game.opponent = "a seeking bot"; // the pairing brings one: nobody is to join by id
  setSetupEnabled(false);
}

function setSetupEnabled(enabled) {
  ui.start.disabled = !enabled;
  ui.seek.disabled = !enabled;
}

function backToSetup() {
  game.phase = "setup";
  game.opponent = null;
  show(ui.seeking, false);
  setSetupEnabled(true);
}

function showSetupError(text) {
  setText(ui.setupError, text);
  show(ui.setupError, true);
}

// --- messages --------------------------------------------------------------------------------

function receive(message) {
  switch (message.type) {
    case "seated":
      return onSeated(message);
    case "seeking":
      ui.cancelSeek.disabled = false;
      return show(ui.seeking, game.phase === "seeking");
    case "seek-cancelled":
      return game.phase === "seeking" ? backToSetup() : undefined;
    case "snapshot":
      return onSnapshot(message);
    case "turn":
      return onTurn(message);
    case "seat":
      return onSeat(message.message);
    case "left":
      return showError(`${message.nick || "Your opponent"} left the game: it forfeits.`);
    case "end":
      return finish(message.result);
    case "error":
      return onError(message);
    default:
      return undefined;
  }
}

function onSeated(message) {
  game.phase = "playing";
  game.simulationId = message.simulationId;
  game.side = message.side;
  show(ui.seeking, false);
  show(ui.setup, false);
  show(ui.game, true);
  show(ui.result, false);
  show(ui.again, false);
  show(ui.banner, false);
  show(ui.error, false);
  setText(ui.simId, message.simulationId);
  ui.watchLink.href = `/watch/${encodeURIComponent(message.simulationId)}`;
  setText(ui.watchLink, `/watch/${message.simulationId}`);
  document.title = `Thud ${message.simulationId} · Dwarven Tavern Arena`;
  if (game.view) game.view.redraw(); // the canvas was hidden until now: lay it out again
  updatePeace();
  updateStatus();
}

function onSnapshot(message) {
  if (message.game !== "thud" || (game.simulationId && message.simulationId !== game.simulationId)) return;
  game.players = message.players || [];
  game.status = message.status;
  if (!game.view) {
    game.board = message.board;
    game.view = new ThudView(ui.canvas, message.board);
  }
  if (message.state) playback.show({ state: message.state, scores: message.scores, snapshot: true });
  else renderPanel(null);
  setClock(message.clock);
  if (message.result) finish(message.result);
  updateStatus();
}

function onTurn(message) {
  if (message.simulationId !== game.simulationId) return;
  game.status = "playing";
  if (message.seat === game.side) game.myTurn = false; // our move was played
  setClock(message.clock);
  playback.advance({ state: message.state, scores: message.scores, events: message.events, turn: message.turn, seat: message.seat });
}

function onSeat(message) {
  switch (message.type) {
    case "turn": {
      const { moves, ...position } = message.state;
      game.status = "playing";
      game.myTurn = true;
      game.turn = message.turn;
      game.moves = moves || [];
      game.selected = null;
      // Normally the spectator turn already showed this position; after a snapshot it may not.
      const shown = game.shown && game.shown.state;
      if (!shown || shown.ply !== position.ply) playback.show({ state: position, scores: position.score, snapshot: true });
      refreshOverlay();
      updateStatus();
      return;
    }
    case "error":
      if (message.message === "Illegal move" || message.message === "Invalid turn") game.myTurn = true; // still on move
      showError(message.reason ? `${message.message}: ${message.reason}` : message.message);
      refreshOverlay();
      updateStatus();
      return;
    case "win-game":
    case "loss-game":
    case "draw-game":
      finish(message.result, message.type);
      return;
    default:
      return; // game-info: the seated message said it all
  }
}

function onError(message) {
  const text = message.reason ? `${message.message}: ${message.reason}` : message.message;
  if (game.phase === "joining" || game.phase === "seeking") {
    backToSetup();
    showSetupError(text);
  } else showError(text);
}

/** Both sides' clocks, in a game created with a time bank (the flat per-move timeout is not shown). */
function setClock(clock) {
  game.clock = clock && clock.remainingMs ? { ...clock, startedAt: performance.now() - (clock.elapsedMs || 0) } : null;
  showClock();
}

function showClock() {
  const clock = game.phase === "playing" ? game.clock : null;
  show(ui.clockFact, Boolean(clock));
  if (clock) renderBankClocks(ui.clock, clock, performance.now() - clock.startedAt, game.players, "thud");
}

function showError(text) {
  setText(ui.error, text);
  show(ui.error, true);
}

// --- the board -------------------------------------------------------------------------------

function frameShown(frame) {
  game.shown = frame;
  renderPanel(frame);
  if (frame.events) moveList.add(frame.turn, logEntries("thud", frame, game.players));
}

function renderPanel(frame) {
  const state = frame && frame.state;
  renderScoreboard(ui.players, {
    game: "thud",
    players: game.players,
    scores: frame ? frame.scores || (state && state.score) : null,
    toMove: state && game.phase === "playing" && game.status === "playing" ? state.side : null,
    declared: state ? state.declared : null,
    you: game.side,
  });
  setText(ui.ply, state ? `${state.ply - 1} of ${game.board ? game.board.maxPlies : 500}` : "–");
  updatePeace();
}

function movesFrom(at) {
  if (!game.myTurn || !at) return [];
  return game.moves.filter((move) => move.from[0] === at[0] && move.from[1] === at[1]);
}

function refreshOverlay() {
  if (!game.view) return;
  const focus = game.selected || (movesFrom(game.hover).length ? game.hover : null);
  const movable = game.myTurn ? uniqueSquares(game.moves.map((move) => move.from)) : [];
  game.view.setOverlay({ movable, focus, moves: movesFrom(focus), selected: game.selected, hover: game.hover });
  describeFocus(focus);
}

function uniqueSquares(squares) {
  const seen = new Map(squares.map((s) => [key(s), s]));
  return [...seen.values()];
}

function describeFocus(focus) {
  const piece = seatLabel("thud", game.side).replace(/s$/, "").toLowerCase();
  if (!game.myTurn) {
    setText(ui.moveInfo, game.phase === "playing" ? "Hover your pieces when it is your move." : "");
    return;
  }
  const target = game.selected && game.hover ? movesFrom(game.selected).find((m) => key(m.to) === key(game.hover)) : null;
  if (target) {
    const kills = target.kills ? `, kills ${target.kills}` : "";
    setText(ui.moveInfo, `${square(target.from)} → ${square(target.to)}: ${target.kind}${kills}. Click to play it.`);
    return;
  }
  if (!focus) {
    setText(ui.moveInfo, `Hover one of your ${piece}s to see its moves; click it to select.`);
    return;
  }
  const moves = movesFrom(focus);
  const killing = moves.filter((m) => m.kills > 0).length;
  const verb = game.selected ? "Selected" : "The";
  setText(
    ui.moveInfo,
    `${verb} ${piece} on ${square(focus)}: ${moves.length} move${moves.length === 1 ? "" : "s"}` +
      (killing ? `, ${killing} of them kill (red, with the count).` : ", none kills."),
  );
}

function setupBoard() {
  ui.canvas.addEventListener("pointermove", (event) => {
    if (!game.view) return;
    const at = game.view.board.squareAt(event);
    const next = at && game.view.isSquare(at) ? at : null;
    if ((next && key(next)) === (game.hover && key(game.hover))) return;
    game.hover = next;
    refreshOverlay();
  });
  ui.canvas.addEventListener("pointerleave", () => {
    game.hover = null;
    refreshOverlay();
  });
  ui.canvas.addEventListener("click", (event) => {
    if (!game.view) return;
    const at = game.view.board.squareAt(event);
    clickSquare(at && game.view.isSquare(at) ? at : null);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && game.selected) {
      game.selected = null;
      refreshOverlay();
    }
  });
}

function clickSquare(at) {
  if (game.phase !== "playing") return;
  if (!game.myTurn) {
    showError(game.status === "playing" ? "It is not your move yet." : "The game has not started yet.");
    return;
  }
  show(ui.error, false);
  if (!at) {
    game.selected = null;
  } else if (movesFrom(at).length) {
    // One of our pieces that can move: select it (or drop the selection on a second click).
    game.selected = game.selected && key(game.selected) === key(at) ? null : at;
  } else if (game.selected) {
    // Any other square is a move attempt; the server is the referee and says why if not.
    sendMove(game.selected, at);
  } else {
    const mine = (game.shown && game.shown.state && game.shown.state[`${game.side}s`]) || [];
    const own = mine.some((s) => key(s) === key(at));
    showError(own ? "That piece has no legal move." : `Pick one of your ${seatLabel("thud", game.side).toLowerCase()} first.`);
  }
  refreshOverlay();
}

function sendMove(from, to) {
  const message = { type: "move", move: { from, to }, turn: game.turn };
  const declared = Boolean(game.shown && game.shown.state && game.shown.state.declared[game.side]);
  if (game.peace !== declared) message.declare = game.peace;
  if (!socket.send(message)) {
    showError("Not connected to the arena.");
    return;
  }
  game.myTurn = false;
  game.selected = null;
  updateStatus();
}

// --- peace, status and the end ---------------------------------------------------------------

function togglePeace() {
  if (game.phase !== "playing") return;
  game.peace = !game.peace;
  updatePeace();
}

function updatePeace() {
  const state = game.shown && game.shown.state;
  const declared = Boolean(state && game.side && state.declared[game.side]);
  const theirs = Boolean(state && game.side && state.declared[OTHER[game.side]]);
  ui.peace.setAttribute("aria-pressed", String(game.peace));
  ui.peace.classList.toggle("pressed", game.peace);
  setText(ui.peace, game.peace ? "Peace offered" : "Make Peace");
  ui.peace.disabled = game.phase !== "playing";
  const them = game.side ? seatLabel("thud", OTHER[game.side]).toLowerCase() : "";
  let text = "";
  if (game.peace && !declared) text = "Your offer of peace goes with your next move.";
  else if (game.peace && declared) text = theirs ? "Both sides want peace." : `You offer peace; the game ends when the ${them} agree.`;
  else if (!game.peace && declared) text = "Your offer is withdrawn with your next move.";
  else if (theirs) text = `The ${them} offer peace: press Make Peace and move to accept.`;
  setText(ui.peaceStatus, text);
}

function updateStatus() {
  let text;
  const state = game.shown && game.shown.state;
  const waitingForBot = game.phase === "playing" && game.status === "waiting" && !game.opponent;
  show(ui.waitBot, waitingForBot);
  if (waitingForBot) {
    const other = OTHER[game.side];
    setText(ui.waitSide, seatLabel("thud", other).toLowerCase());
    setText(ui.waitId, game.simulationId);
    setText(ui.waitSnippet, JSON.stringify({ type: "join-simulation", game: "thud", nick: "my bot", side: other, simulationId: game.simulationId }));
  }
  if (game.phase === "over") text = "Game over.";
  else if (game.status === "waiting") text = game.opponent ? "Starting…" : "Waiting for a bot to join…";
  else if (game.myTurn) text = `Your move (${seatLabel("thud", game.side).toLowerCase()}).`;
  else if (state && state.side === game.side) text = "Sending your move…";
  else text = `The ${seatLabel("thud", OTHER[game.side] || "troll").toLowerCase()} are thinking…`;
  setText(ui.turnStatus, text);
  ui.turnStatus.classList.toggle("your-move", game.myTurn && game.phase === "playing");
  refreshOverlay();
}

/** The end, from the seat's own message or the spectators' end: whichever comes first. */
function finish(result, seatType) {
  if (game.phase === "over" && game.result) return;
  game.phase = "over";
  game.result = result;
  game.myTurn = false;
  game.selected = null;
  const headline =
    seatType === "win-game" || (!seatType && result.winner === game.side)
      ? "You won!"
      : seatType === "draw-game" || (!seatType && !result.winner)
        ? "A draw."
        : "You lost.";
  const score = formatScore("thud", result.score);
  ui.result.replaceChildren(
    el("strong", { text: headline }),
    el("span", { className: "result-reason", text: result.reason }),
    el("span", { className: "result-score", text: score ? `Dwarfs – trolls: ${score}` : describeResult("thud", result, game.players) }),
  );
  show(ui.result, true);
  setText(ui.banner, `${headline} ${result.reason}`);
  ui.banner.classList.add("banner-final");
  show(ui.banner, true);
  show(ui.again, true);
  updatePeace();
  updateStatus();
}

function endLocally(reason) {
  game.phase = "over";
  game.myTurn = false;
  showError(reason);
  show(ui.again, true);
  updatePeace();
  updateStatus();
}
