#!/usr/bin/env node
// Plays a Thud king-of-the-hill challenge client (a JavaScript class) as an arena seat.
//
//   node server/games/thud/web/thud-client.js --side dwarf --file bots/js/clients/dwarf/shieldwall.js
//        [--host 127.0.0.1] [--port 9000] [--simulation ID] [--nick NAME] [--think-ms 60000]
//
// No dependencies beyond Node's standard library. The client file holds a class, with or
// without `module.exports =` in front, as entries were written for the challenge. It is run in a
// fresh context (Node's `vm`) that has `console` (printed on stderr) and the JavaScript
// built-ins, and no `require`, `process`, timers or anything else of Node's. The controller
// (thud-controller.js, the same file a browser page loads) is evaluated in that context too, so
// the arrays and objects the client gets are of its own realm.
//
// The client is constructed when the arena seats us (`game-info`), as the engine did:
// `new Client(controller, Object.assign({}, utils))`, then `client.controller = controller`.
// Each `turn` message becomes the controller's board, `turn()` is called, and the move it made
// is sent, with `declare` if the client changed its flag (`end_turn()` runs inside `move()`,
// so a declare made there goes with this move).
//
// The client file is loaded before anything else: one that cannot be read or does not load
// (a syntax error, an exception at its top level, no class) is said in one line on stderr, and
// the adapter exits with status 2 without connecting, so no game waits for it. Bad options do
// the same.
// When the client cannot go on once seated, the adapter leaves the game (closes the
// connection), which the arena scores as a loss for this side ("Player disconnected"); nothing
// else is affected:
//   - an exception from turn() or end_turn(), or a turn that runs longer than --think-ms: the
//     stack trace goes to stderr, exit status 1;
//   - an exception from the constructor (run when the arena seats us): the error goes to stderr
//     at once, and the adapter leaves on its first turn (exit status 1). Leaving before the game
//     starts would only free the seat (outside tournaments the game would then wait for someone
//     else), and the engine failed as the game began.
// A turn() that returns without a successful move ends the game as the challenge's engine did:
// it stopped there and scored the position as it stood. The adapter sends the arena's
// {"type": "player-turn", "stop": true}, and the game ends with the reason "No move".
// Every reply carries the `turn` it answers (the ply), so a late one is refused, never played.
// Errors from the arena go to stderr. An `Illegal move` or `Invalid turn` means the arena and
// the controller disagree about the rules; the adapter cannot recover a turn it has already
// played, so it leaves (exit status 1). A finished game exits with status 0.
'use strict';
const fs = require('fs');
const net = require('net');
const path = require('path');
const util = require('util');
const vm = require('vm');

const USAGE =
  'usage: node thud-client.js --side dwarf|troll --file CLIENT.js [--host H] [--port N] ' +
  '[--simulation ID] [--nick NAME] [--think-ms MS]';
const EXIT_FAILED = 1;
const EXIT_BAD_INPUT = 2;
const LOAD_TIMEOUT_MS = 10000; // for running the client file's top level
const MAX_NICK = 64;

function parseArgs(argv) {
  const args = { side: null, file: null, host: '127.0.0.1', port: 9000, simulation: null, nick: null, 'think-ms': 60000 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!argv[i].startsWith('--') || !(key in args) || i + 1 >= argv.length) {
      throw new Error('bad option ' + argv[i]);
    }
    args[key] = argv[i + 1];
  }
  if (args.side !== 'dwarf' && args.side !== 'troll') throw new Error('--side must be dwarf or troll');
  if (!args.file) throw new Error('--file is required');
  args.port = Number(args.port);
  args['think-ms'] = Number(args['think-ms']);
  if (!Number.isInteger(args.port) || args.port <= 0) throw new Error('--port must be a port number');
  if (!(args['think-ms'] > 0)) throw new Error('--think-ms must be a positive number');
  if (!args.nick) args.nick = path.basename(args.file).replace(/\.js$/, '');
  args.nick = args.nick.slice(0, MAX_NICK);
  return args;
}

// A fresh context for the client: JavaScript's built-ins, a console on stderr, and the
// controller evaluated inside it (then removed from its globals).
function makeSandbox(label) {
  const write = (...parts) => process.stderr.write(label + ': ' + util.format(...parts) + '\n');
  const sandboxConsole = { log: write, info: write, warn: write, error: write, debug: write, trace: write, dir: write };
  const context = vm.createContext({ console: sandboxConsole });
  const controllerFile = path.join(__dirname, 'thud-controller.js');
  vm.runInContext(fs.readFileSync(controllerFile, 'utf8'), context, { filename: controllerFile });
  const api = context.ThudController;
  delete context.ThudController;
  return { context: context, api: api };
}

// The class a challenge entry holds (null if none): run as a script with `module.exports`
// available, else evaluated as an expression (a bare `class { ... }`, as entries were pasted
// into the editor).
function loadClientClass(source, filename, context) {
  let script = null;
  let syntaxError = null;
  try {
    script = new vm.Script(source, { filename: filename });
  } catch (error) {
    syntaxError = error;
  }
  if (script) {
    context.module = vm.runInContext('({ exports: {} })', context);
    context.exports = context.module.exports;
    script.runInContext(context, { timeout: LOAD_TIMEOUT_MS });
    const exported = context.module && context.module.exports;
    if (typeof exported === 'function') return exported;
  }
  let expression;
  try {
    expression = new vm.Script('(' + source.replace(/[\s;]+$/, '') + '\n)', { filename: filename });
  } catch (error) {
    if (syntaxError) throw syntaxError;
    return null; // code that runs, but neither exports a class nor is one
  }
  const value = expression.runInContext(context, { timeout: LOAD_TIMEOUT_MS });
  return typeof value === 'function' ? value : null;
}

const describeError = (error) => (error && error.stack) || String(error);

// Why a client file cannot be played, in one line: the error, and where when the engine says
// (an error of the client's realm is no `instanceof Error` here: its fields are read instead).
function loadProblem(error) {
  if (error && error.code === 'ENOENT') return 'no such file';
  if (error && error.code) return error.message; // EACCES, EISDIR...
  const text = error && error.name ? error.name + ': ' + error.message : String(error);
  const stack = String((error && error.stack) || '');
  // A syntax error's stack begins with FILE:LINE; another error's first frame names it.
  const place = /^(\S+:\d+)\n/.exec(stack) || /\n\s+at (?:.*\()?(\S+?:\d+):\d+\)?/.exec(stack);
  return place ? text + ' (' + place[1] + ')' : text;
}

function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(error.message + '\n' + USAGE + '\n');
    process.exitCode = EXIT_BAD_INPUT;
    return;
  }
  const say = (text) => process.stderr.write(args.nick + ': ' + text + '\n');

  const { context, api } = makeSandbox(args.nick);
  let ClientClass = null;
  let problem = 'it holds no class: write `module.exports = class { ... }` or just the class';
  try {
    ClientClass = loadClientClass(fs.readFileSync(args.file, 'utf8'), path.resolve(args.file), context);
  } catch (error) {
    problem = loadProblem(error);
  }
  if (!ClientClass) {
    say('cannot load ' + args.file + ': ' + problem);
    process.exitCode = EXIT_BAD_INPUT;
    return;
  }

  const socket = net.connect({ host: args.host, port: args.port });
  socket.setNoDelay(true);
  let seat = null;
  let failed = null; // the exit status to leave with on the first turn: the client could not start
  let finished = false; // the arena sent the result, or we left
  let pending = '';

  const send = (message) => socket.write(JSON.stringify(message) + '\n');
  // Stop playing: close the connection (the arena counts it as leaving the game).
  const leave = (status) => {
    finished = true;
    process.exitCode = status;
    socket.destroy();
  };

  // Each turn runs inside the sandbox with a time limit, so an endless loop ends the game.
  const turnScript = new vm.Script('globalThis[" arena turn "]()');
  const playTurn = (state) => {
    context[' arena turn '] = () => seat.play(state);
    try {
      return turnScript.runInContext(context, { timeout: args['think-ms'] });
    } finally {
      delete context[' arena turn '];
    }
  };

  socket.on('connect', () => {
    send({ type: 'join-simulation', game: 'thud', nick: args.nick, simulationId: args.simulation, side: args.side });
  });
  socket.on('data', (chunk) => {
    pending += chunk.toString('utf8');
    let newline;
    while (!finished && (newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line) handle(JSON.parse(line));
    }
  });
  socket.on('error', (error) => {
    if (!finished) say('connection error: ' + error.message);
    if (!finished) leave(EXIT_FAILED);
  });
  socket.on('close', () => {
    if (!finished) {
      say('the arena closed the connection before the game ended');
      leave(EXIT_FAILED);
    }
  });

  function handle(message) {
    switch (message.type) {
      case 'game-info':
        seated(message);
        break;
      case 'turn':
        turn(message.state, message.turn);
        break;
      case 'win-game':
      case 'loss-game':
      case 'draw-game': {
        const result = message.result || {};
        process.stdout.write(message.type + ': ' + result.reason + ' ' + JSON.stringify(result.score) + '\n');
        finished = true;
        socket.end();
        break;
      }
      case 'error': {
        say('arena: ' + message.message + (message.reason ? ' (' + message.reason + ')' : ''));
        if (message.message === 'Illegal move' || message.message === 'Invalid turn') {
          say('the arena refused a move this controller allowed; leaving the game');
          leave(EXIT_FAILED);
        } else if (!seat && !failed) {
          leave(EXIT_FAILED); // could not join
        }
        break;
      }
      default:
        break;
    }
  }

  function seated(info) {
    process.stdout.write('joined ' + info.simulationId + ' as ' + info.side + '\n');
    try {
      seat = api.createSeat(ClientClass, info.side, { warn: (text) => say('warning: ' + text) });
    } catch (error) {
      say('the client threw in its constructor:\n' + describeError(error));
      failed = EXIT_FAILED;
    }
  }

  function turn(state, number) {
    if (failed) {
      say('ply ' + state.ply + ': the client could not start; leaving the game');
      leave(failed);
      return;
    }
    let reply;
    try {
      reply = playTurn(state);
    } catch (error) {
      say('ply ' + state.ply + ': the client threw:\n' + describeError(error));
      leave(EXIT_FAILED);
      return;
    }
    if (!reply) {
      const score = state.score || {};
      say(
        'ply ' + state.ply + ': the client made no move: the game stops here, scored as it ' +
        'stands (dwarfs ' + score.dwarfs + ', trolls ' + score.trolls + '), as the challenge\'s ' +
        'engine did'
      );
      send({ type: 'player-turn', turn: number, stop: true });
      return;
    }
    send(Object.assign({ type: 'player-turn' }, reply, { turn: number }));
  }
}

main();
