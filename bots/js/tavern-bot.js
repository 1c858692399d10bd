#!/usr/bin/env node
// A Dwarven Tavern bot for Node.js with no dependencies: it shows the whole protocol in one file.
//
//   node bots/js/tavern-bot.js [--host H] [--port N] [--simulation ID] [--nick NAME]
//   TAVERN_BOT_KEY=... node bots/js/tavern-bot.js --seek [--bot NAME] [--host H] [--port N]
//
// With --seek the bot is a registered one (`tavern bots add NAME`, docs/ladder.md): it names
// itself with --bot NAME (or TAVERN_BOT_NAME) and the key from TAVERN_BOT_KEY, never from the
// command line (where `ps` would show it) and never printed, seeks a rated game on the ladder
// and plays the game it is paired into as a joined one.
// Messages are JSON objects, one per line. The bot buffers what it reads and splits on "\n",
// because TCP may deliver half a message or several at once.
// The join or seek asks to be pinged ("pings": true): the bot answers each {"type":"ping","id":N}
// with {"type":"pong","id":N} as soon as it reads it, so that the arena can tell the network's
// share of a reply's time from the bot's thinking (docs/protocol.md).
// Strategy: each team scores by pushing toward its own home row (team1 south, team2 north), so
// attackers push the rival barrel and defenders push their own barrel the same way.
'use strict';
const net = require('net');

function parseArgs(argv) {
  const args = { host: '127.0.0.1', port: 9000, simulation: null, nick: 'JS bot',
                 bot: process.env.TAVERN_BOT_NAME || null, seek: false };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in args)) throw new Error('unknown option ' + argv[i]);
    if (key === 'seek') { args.seek = true; i -= 1; continue; } // a flag: no value follows
    args[key] = key === 'port' ? Number(argv[i + 1]) : argv[i + 1];
  }
  return args;
}

// What the bot sends first: a rated seek under its registered name, or a join. Both ask for pings.
function firstMessage(args) {
  const names = ['Gimli', 'Durin', 'Thorin', 'Balin', 'Dwalin'];
  if (!args.seek) {
    return { type: 'join-simulation', nick: args.nick, simulationId: args.simulation, names, pings: true };
  }
  const key = process.env.TAVERN_BOT_KEY;
  if (!args.bot || !key) {
    console.error('--seek needs --bot NAME (or TAVERN_BOT_NAME) and the key in TAVERN_BOT_KEY');
    process.exit(2);
  }
  return { type: 'seek', game: 'tavern', bot: args.bot, key, rated: true, names, pings: true };
}

const STEPS = { NORTH: [0, -1], EAST: [1, 0], SOUTH: [0, 1], WEST: [-1, 0] };

// The first move of a shortest path from start to goal, going around both barrels.
function firstStep(start, goal, barrels, width, height) {
  const key = (x, y) => x + ',' + y;
  const blocked = new Set(barrels.map((b) => key(b.x, b.y)));
  const first = new Map([[key(start.x, start.y), '']]);
  const queue = [[start.x, start.y]];
  while (queue.length) {
    const [x, y] = queue.shift();
    if (x === goal.x && y === goal.y) return first.get(key(x, y));
    for (const [name, [dx, dy]] of Object.entries(STEPS)) {
      const nx = x + dx, ny = y + dy, k = key(nx, ny);
      if (nx < 0 || ny < 0 || nx >= width || ny >= height || first.has(k) || blocked.has(k)) continue;
      first.set(k, first.get(key(x, y)) || name);
      queue.push([nx, ny]);
    }
  }
  return '';
}

function chooseActions(state, team, width, height) {
  const rival = team === 'team1' ? 'team2' : 'team1';
  const push = team === 'team1' ? 'SOUTH' : 'NORTH';
  const [dx, dy] = STEPS[push];
  const own = state.barrels[team].coords, other = state.barrels[rival].coords;
  const barrels = [own, other];
  return state[team].map((dwarf, index) => {
    const target = index % 2 === 0 ? other : own;
    const behind = { x: target.x - dx, y: target.y - dy };
    if (dwarf.coords.x === behind.x && dwarf.coords.y === behind.y) {
      return { botId: dwarf.id, type: 'MOVE', direction: push };
    }
    const step = firstStep(dwarf.coords, behind, barrels, width, height);
    return step ? { botId: dwarf.id, type: 'MOVE', direction: step } : { botId: dwarf.id, type: 'PASS' };
  });
}

// Plays one game on a new connection; `paced` is called instead if the arena asks to try again
// later (too many key checks from this address wait there).
function play(args, first, paced) {
  const socket = net.connect({ host: args.host, port: args.port });
  const send = (message) => socket.write(JSON.stringify(message) + '\n');
  let team = null, width = 0, height = 0, pending = '';

  socket.on('connect', () => send(first));
  socket.on('data', (chunk) => {
    pending += chunk.toString('utf8');
    let newline;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line) handle(JSON.parse(line));
    }
  });
  socket.on('error', (error) => { console.error('connection error: ' + error.message); process.exitCode = 1; });

  function handle(message) {
    switch (message.type) {
      case 'ping':
        // Answered at once, never after thinking: the arena times the network by it.
        send({ type: 'pong', id: message.id });
        break;
      case 'game-info':
        ({ team, width, height } = message);
        console.log('joined ' + message.simulationId + ' as ' + team);
        break;
      case 'turn':
        // `turn` names the turn answered: a reply that arrives too late is refused (Stale turn)
        // instead of being played as a later turn.
        send({ type: 'player-turn', turn: message.turn,
               actions: chooseActions(message.state, team, width, height) });
        break;
      case 'score':
        console.log('point for ' + message.team);
        break;
      case 'win-game': case 'loss-game': case 'draw-game':
        console.log(message.type + (message.result ? ': ' + message.result.reason : ''));
        socket.end();
        break;
      case 'error':
        console.error('server error: ' + message.message + (message.reason ? ' (' + message.reason + ')' : ''));
        if (message.message === 'Too many key checks' && team === null) {
          socket.destroy();
          paced();
        } else if (!['Turn timeout', 'Stale turn', 'Player disconnected'].includes(message.message)) {
          process.exitCode = 1; // a failed join or seek (such as Invalid bot key) ends the bot
          socket.end();
        }
        break;
      default:
        break;
    }
  }
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const first = firstMessage(args);
  // Too many key checks wait at the arena: connect again and send the seek again, after 1 s,
  // then 2, 4... up to 30 s (a wrong key, or any other error, ends the bot).
  let delay = 1;
  const attempt = () => play(args, first, () => {
    console.error('trying again in ' + delay + ' s');
    setTimeout(attempt, delay * 1000);
    delay = Math.min(delay * 2, 30);
  });
  attempt();
}

main();
