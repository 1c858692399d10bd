// A bot written the way the original Dwarven Tavern's bundled dummy bot was (2013; the dummy of
// https://github.com/PIWEEK/dwarven-tavern), rebuilt from a description of it for compatibility
// tests. Like the original it writes bare JSON with no newline and parses EACH TCP READ as exactly
// one JSON message (so two messages in one read crash it, as they crashed the original). The only
// change: the port comes from argv[3] (the original hard-coded 9000).
//   node dummy-bot.js [simulationId|""] [port]
var net = require('net');

var simulationId = process.argv[2] || null;
var port = Number(process.argv[3] || 9000);
var targetY = 0, defendY = 0, team = null;

var server = net.connect({port: port}, function () {
  server.write(JSON.stringify({
    type: 'join-simulation', nick: 'Dummy', simulationId: simulationId,
    names: ['Carawebo', 'Pantuflo', 'Chistaburras', 'Pontato', 'Jhonny Tablas']
  }));
});

function toward(bot, x, y) {
  if (bot.coords.y !== y) return bot.coords.y < y ? 'SOUTH' : 'NORTH';
  if (bot.coords.x !== x) return bot.coords.x < x ? 'EAST' : 'WEST';
  return null;
}

// Go to the square behind a barrel (seen from the goal row), then push it toward the goal row.
function pushToward(bot, barrel, goalY) {
  var behindY = goalY > barrel.y ? barrel.y - 1 : barrel.y + 1;
  if (bot.coords.x === barrel.x && bot.coords.y === behindY) {
    return {botId: bot.id, type: 'MOVE', direction: goalY > barrel.y ? 'SOUTH' : 'NORTH'};
  }
  var direction = bot.coords.y !== behindY && bot.coords.x === barrel.x
    ? (bot.coords.x > 1 ? 'WEST' : 'EAST')   // step aside instead of pushing the barrel back
    : toward(bot, barrel.x, behindY);
  return direction ? {botId: bot.id, type: 'MOVE', direction: direction} : {botId: bot.id, type: 'PASS'};
}

server.on('data', function (data) {
  var message = JSON.parse(data.toString());   // one read = one message, as the original did
  if (message.type === 'game-info') {
    team = message.team;
    targetY = defendY = team === 'team1' ? message.height : 0;
  } else if (message.type === 'turn') {
    var state = message.state;
    var rival = team === 'team1' ? 'team2' : 'team1';
    var mine = state[team];
    var actions = [];
    [0, 2, 4].forEach(function (i) { actions.push(pushToward(mine[i], state.barrels[rival].coords, targetY)); });
    [1, 3].forEach(function (i) { actions.push(pushToward(mine[i], state.barrels[team].coords, defendY)); });
    server.write(JSON.stringify({type: 'player-turn', actions: actions}));
  } else if (message.type === 'ready') {
    server.write(JSON.stringify({type: 'join-simulation', nick: 'Dummy', simulationId: message.simulationId,
      names: ['Carawebo', 'Pantuflo', 'Chistaburras', 'Pontato', 'Jhonny Tablas']}));
  } else if (message.type === 'error' && message.message === 'Wrong simulation ID') {
    server.write(JSON.stringify({type: 'create-simulation'}));
  } else if (message.type === 'score' || (message.type === 'error' && message.message === 'Player disconnected')) {
    console.log(JSON.stringify(message));
  } else {
    console.log(JSON.stringify({type: message.type}));
    server.end();
  }
});
