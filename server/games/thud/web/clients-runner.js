// Running a person's Thud client from the /clients page: a sandbox (a Web Worker that holds the
// client) and a seat game (a websocket of its own that plays one arena game with it).
//
// The client's code never runs in the page: the page relays each `turn` the arena sends its seat
// to the worker, and the worker's move back to the arena, which referees it. A turn that takes
// longer than its limit terminates the worker. When the client cannot go on (it threw, made no
// move, ran out of time, or the arena refused its move) the game's websocket is closed, which the
// arena scores as leaving the game: a loss for that side, as with the Node adapter
// (server/games/thud/web/thud-client.js), and nothing else is affected.

import { socketUrl } from "/static/js/socket.js";

const WORKER_URL = "/games/thud/clients-worker.js";
// After the seat's result, how long to wait for the spectator stream's last ply and end.
const LAST_PLY_WAIT_MS = 2000;

export class ClientSandbox {
  /** @param {object} hooks onConsole(text, level), onWarn(text) */
  constructor({ onConsole, onWarn } = {}) {
    this.onConsole = onConsole || (() => {});
    this.onWarn = onWarn || (() => {});
    this.seq = 0;
    this.pending = null;
    this.dead = false;
    this.worker = new Worker(WORKER_URL);
    this.worker.addEventListener("message", (event) => this.receive(event.data));
    this.worker.addEventListener("error", (event) => {
      event.preventDefault();
      this.settle({ type: "threw", error: { name: "Error", message: event.message || "the client's worker failed", stack: "" } });
    });
  }

  receive(data) {
    if (!data || typeof data !== "object") return;
    if (data.type === "console") this.onConsole(String(data.text), String(data.level));
    else if (data.type === "warn") this.onWarn(String(data.text));
    else if (this.pending && data.seq === this.pending.seq) this.settle(data);
  }

  settle(answer) {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    clearTimeout(pending.timer);
    pending.resolve(answer);
  }

  /** One request to the worker; resolves with its answer, {type: "timeout"} or {type: "gone"}. */
  request(message, limitMs) {
    if (this.dead) return Promise.resolve({ type: "gone" });
    this.seq += 1;
    const seq = this.seq;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.settle({ type: "timeout", limitMs });
        this.terminate();
      }, limitMs);
      this.pending = { seq, resolve, timer };
      this.worker.postMessage({ ...message, seq });
    });
  }

  /** Evaluate and construct the client; resolves with {type: "loaded", checks} (or a timeout). */
  load(source, side, name, limitMs) {
    return this.request({ type: "load", source, side, name }, limitMs);
  }

  turn(state, limitMs) {
    return this.request({ type: "turn", state }, limitMs);
  }

  terminate() {
    if (this.dead) return;
    this.dead = true;
    this.worker.terminate();
    this.settle({ type: "gone" });
  }
}

/** The static checks passed, so the client can play. */
export function playable(checks) {
  return Boolean(checks && checks.evaluates.ok && checks.klass.ok && checks.methods.ok);
}

/**
 * One arena game with the client in a seat, on a websocket of its own.
 *
 * hooks: onSeated(seated), onWatch(message) for the spectator stream (snapshot, turn, end,
 * left), onNotice(text) for arena errors that do not end the game.
 * `done` resolves with {status: "finished", result, seatType} or {status: "failed", failure}
 * or {status: "stopped"}; failure.kind is threw | no-move | timeout | illegal | join | connection.
 */
export class SeatGame {
  constructor({ sandbox, side, opponent, nick, limitMs, hooks }) {
    this.sandbox = sandbox;
    this.side = side;
    this.opponent = opponent;
    this.nick = nick;
    this.limitMs = limitMs;
    this.hooks = hooks || {};
    this.simulationId = null;
    this.lastMove = null;
    this.finished = false;
    this.done = new Promise((resolve) => {
      this.resolve = resolve;
    });
    this.ws = new WebSocket(socketUrl());
    this.ws.addEventListener("open", () => {
      // client: the seat is labelled as a client's, not a person's, wherever it is shown.
      this.send({ type: "play", game: "thud", side, opponent: opponent || null, nick, client: true });
    });
    this.ws.addEventListener("message", (event) => {
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (message && typeof message.type === "string") this.receive(message);
    });
    this.ws.addEventListener("close", () => {
      this.fail({ kind: "connection", text: "The connection to the arena closed before the game ended." });
    });
  }

  send(message) {
    if (this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  call(name, ...args) {
    if (this.hooks[name]) this.hooks[name](...args);
  }

  receive(message) {
    if (this.finished) return;
    switch (message.type) {
      case "seated":
        this.simulationId = message.simulationId;
        this.call("onSeated", message);
        return;
      case "snapshot":
      case "turn":
      case "left":
        this.call("onWatch", message);
        return;
      case "end":
        this.call("onWatch", message);
        // The spectator stream's end comes after its last turn: the game ends here, with the
        // seat's own result if it came first.
        this.end(this.seatResult || { status: "finished", result: message.result, seatType: null });
        return;
      case "seat":
        this.seatMessage(message.message || {});
        return;
      case "error": {
        const text = message.reason ? `${message.message}: ${message.reason}` : message.message;
        if (!this.simulationId) this.fail({ kind: "join", text: `The arena did not seat the client (${text}).` });
        else this.call("onNotice", text);
        return;
      }
      default:
        return;
    }
  }

  seatMessage(message) {
    switch (message.type) {
      case "turn":
        this.play(message.state, message.turn);
        return;
      case "error":
        if (message.message === "Illegal move" || message.message === "Invalid turn") {
          this.fail({ kind: "illegal", move: this.lastMove, text: message.message, reason: message.reason || "" });
        } else {
          this.call("onNotice", message.reason ? `${message.message}: ${message.reason}` : message.message);
        }
        return;
      case "win-game":
      case "loss-game":
      case "draw-game":
        // The seat hears its result before the spectator stream (which this page watches too)
        // has sent the last ply: wait for that stream's end, so the board shows the last ply.
        this.seatResult = { status: "finished", result: message.result, seatType: message.type };
        this.endTimer = setTimeout(() => this.end(this.seatResult), LAST_PLY_WAIT_MS);
        return;
      default:
        return; // game-info: "seated" said it all
    }
  }

  // Each move names the turn it answers, so a late one is refused instead of played as a later ply.
  async play(state, turn) {
    const ply = state.ply;
    const answer = await this.sandbox.turn(state, this.limitMs);
    if (this.finished) return;
    switch (answer.type) {
      case "move": {
        const reply = { type: "move", move: { from: answer.move.from, to: answer.move.to }, turn };
        if (answer.declare !== undefined) reply.declare = answer.declare;
        this.lastMove = { ply, ...reply.move, declare: reply.declare };
        if (!this.send(reply)) this.fail({ kind: "connection", text: "The connection to the arena closed before the move was sent." });
        return;
      }
      case "no-move":
        // As the challenge's engine did: the game stops here, scored as it stands. The
        // validator still counts it against the client, as the challenge's did.
        this.send({ type: "move", stop: true, turn });
        this.fail({ kind: "no-move", ply, score: state.score });
        return;
      case "threw":
        this.fail({ kind: "threw", ply, error: answer.error });
        return;
      case "timeout":
        this.fail({ kind: "timeout", ply, limitMs: answer.limitMs });
        return;
      default:
        this.fail({ kind: "threw", ply, error: { name: "Error", message: "the client's worker stopped", stack: "" } });
    }
  }

  end(outcome) {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.endTimer);
    this.sandbox.terminate();
    this.ws.close();
    this.resolve({ ...outcome, simulationId: this.simulationId });
  }

  /** The client cannot go on: leave the game (the arena scores it as a loss for this side). */
  fail(failure) {
    this.end({ status: "failed", failure });
  }

  stop() {
    this.end({ status: "stopped" });
  }
}
