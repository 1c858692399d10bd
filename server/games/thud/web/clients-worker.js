// The /clients page's sandbox: one Thud challenge client, evaluated and played in this worker.
//
// A worker has no window, no document and no access to the page's storage or websocket; the
// page terminates it when a turn runs too long, so an endless loop cannot freeze the tab. The
// server sends this script with its own Content-Security-Policy (visor/app.py): eval is allowed
// here (a client is source text) and network requests and nested workers are not.
//
// The client is loaded the way the Node adapter (server/games/thud/web/thud-client.js) loads a file: run as a
// script with `module.exports` available, and if that exports no class, evaluated as an
// expression (a bare `class { ... }`). Then the seat is made by the shared controller,
// /games/thud/thud-controller.js, which constructs the client as the challenge's engine did.
//
// Messages, page -> worker:
//   {type: "load", seq, source, side, name}  evaluate the client, construct it, answer "loaded"
//   {type: "turn", seq, state}               play one turn on the arena's turn state
// worker -> page:
//   {type: "loaded", seq, checks}            every check's verdict (see `load` below)
//   {type: "move", seq, move, declare?}      the move the client made (declare if it changed)
//   {type: "no-move", seq}                   turn() returned without a successful move
//   {type: "threw", seq, error}              the client threw: {name, message, stack}
//   {type: "console", text, level}           what the client logged (bounded per worker)
//   {type: "warn", text}                     the controller's warnings
"use strict";

importScripts("/games/thud/thud-controller.js");

const api = self.ThudController;
delete self.ThudController;
const post = self.postMessage.bind(self);
const indirectEval = eval; // an indirect call: the client runs in the global scope, as a script
const MAX_CONSOLE_LINES = 500;
let consoleLines = 0;
let seat = null;

// The page's channel stays ours: the client gets no postMessage, no way to load more code, and
// no close() (a stopped worker would only look like an endless turn).
for (const name of ["postMessage", "importScripts", "close"]) {
  for (let scope = self; scope; scope = Object.getPrototypeOf(scope)) {
    if (Object.prototype.hasOwnProperty.call(scope, name)) delete scope[name];
  }
}

self.console = makeConsole();

self.addEventListener("message", (event) => {
  const message = event.data || {};
  if (message.type === "load") post({ type: "loaded", seq: message.seq, checks: load(message) });
  else if (message.type === "turn") post(Object.assign({ seq: message.seq }, turn(message.state)));
});

function makeConsole() {
  const write = (level) => (...parts) => {
    consoleLines += 1;
    if (consoleLines > MAX_CONSOLE_LINES) return;
    const text = consoleLines === MAX_CONSOLE_LINES ? "… (more output is not shown)" : parts.map(show).join(" ");
    post({ type: "console", level: level, text: text });
  };
  const out = {};
  for (const level of ["log", "info", "warn", "error", "debug", "trace", "dir", "table"]) out[level] = write(level);
  return out;
}

function show(value) {
  if (typeof value === "string") return value;
  try {
    const text = JSON.stringify(value);
    if (text !== undefined) return text;
  } catch (error) {
    // a cycle, a BigInt...: fall back to String
  }
  return safeString(value);
}

function safeString(value) {
  try {
    return String(value);
  } catch (error) {
    return Object.prototype.toString.call(value);
  }
}

function describe(error) {
  if (error instanceof Error) {
    return { name: safeString(error.name), message: safeString(error.message), stack: trimStack(safeString(error.stack || "")) };
  }
  return { name: "thrown value", message: show(error), stack: "" };
}

// The frames below the client's own (this worker calling the controller calling the client) say
// nothing to its author: drop them, and show the controller's frames by path, not by URL.
function trimStack(stack) {
  const lines = stack.split("\n");
  const ours = (line) => /^\s+at /.test(line) && /\/games\/thud\/(clients-worker|thud-controller)\.js:/.test(line);
  while (lines.length > 1 && ours(lines[lines.length - 1])) lines.pop();
  return lines.join("\n").split(self.location.origin + "/").join("/");
}

// Where a term first occurs: "line 12".
function lineOf(source, index) {
  return source.slice(0, index).split("\n").length;
}

// The class a client's source holds, as the Node adapter finds it. Throws what evaluating threw.
function loadClass(source, filename) {
  const named = "\n//# sourceURL=" + filename;
  let syntaxError = null;
  try {
    new Function(source); // parses without running
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    syntaxError = error;
  }
  if (!syntaxError) {
    self.module = { exports: {} };
    self.exports = self.module.exports;
    indirectEval(source + named);
    const exported = self.module && self.module.exports;
    if (typeof exported === "function") return exported;
  }
  const expression = "(" + source.replace(/[\s;]+$/, "") + "\n)";
  try {
    new Function("return " + expression);
  } catch (error) {
    throw syntaxError || error;
  }
  const value = indirectEval(expression + named);
  if (typeof value === "function") return value;
  throw new TypeError("the code holds no class: write `module.exports = class { ... }` or just the class");
}

// The challenge's checks that need no game. Each is {ok, detail?, error?}; a check that could not
// run (an earlier one failed) is {ok: null}.
function load(message) {
  const source = String(message.source || "");
  const filename = (message.name || "client") + ".js";
  const found = api.forbiddenTerms(source);
  const checks = {
    terms: found.length
      ? { ok: false, terms: found.map((term) => ({ term: term, line: lineOf(source, source.indexOf(term)) })) }
      : { ok: true },
    evaluates: { ok: null },
    klass: { ok: null },
    methods: { ok: null },
  };
  let ClientClass;
  try {
    ClientClass = loadClass(source, filename);
    checks.evaluates = { ok: true };
  } catch (error) {
    checks.evaluates = { ok: false, error: describe(error) };
    return checks;
  }
  const name = ClientClass.name ? "class " + ClientClass.name : "an anonymous class";
  if (!ClientClass.prototype) {
    checks.klass = { ok: false, detail: "The code yields a function that cannot be constructed (an arrow function?)." };
    return checks;
  }
  try {
    seat = api.createSeat(ClientClass, message.side, { warn: (text) => post({ type: "warn", text: text }) });
  } catch (error) {
    checks.klass = { ok: false, detail: "The constructor of " + name + " threw when given the controller:", error: describe(error) };
    return checks;
  }
  // The engine also set client.controller after constructing it, so a constructor that takes
  // no parameter still works; say so, as that is often a slip.
  checks.klass = {
    ok: true,
    detail: "Constructed " + name + " with the controller" +
      (ClientClass.length === 0 ? " (its constructor declares no parameter: it can use this.controller)." : "."),
  };
  const missing = ["turn", "end_turn"].filter((method) => typeof seat.client[method] !== "function");
  checks.methods = missing.length
    ? { ok: false, missing: missing, detail: "no " + missing.join(" and no ") + " method" }
    : { ok: true };
  if (missing.length) seat = null;
  return checks;
}

function turn(state) {
  if (!seat) return { type: "threw", error: { name: "Error", message: "the client is not loaded", stack: "" } };
  let reply;
  try {
    reply = seat.play(state);
  } catch (error) {
    return { type: "threw", error: describe(error) };
  }
  if (!reply) return { type: "no-move" };
  const answer = { type: "move", move: { from: reply.move.from.slice(), to: reply.move.to.slice() } };
  if (reply.declare !== undefined) answer.declare = Boolean(reply.declare);
  return answer;
}
