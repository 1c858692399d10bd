<?php
// A starter bot for Dwarven Tavern Arena that plays both games, in one PHP file, with nothing but
// what php-cli ships (PHP 8.1 or later; Debian: apt-get install php-cli).
//
//   php bot.php --game thud [--side troll] [--simulation ID] [--host H] [--port N] [--nick NAME]
//   TAVERN_BOT_KEY=... php bot.php --game thud --seek [--bot NAME] [--host H] [--port N]
//
// The arena and the bot exchange JSON objects, one per line (docs/protocol.md). Without
// --simulation the bot joins a random waiting simulation of its game, or creates one and waits.
// With --seek it is a registered bot (`tavern bots add NAME`, docs/ladder.md): it names itself
// with --bot NAME (or TAVERN_BOT_NAME) and the key from TAVERN_BOT_KEY, never from the command
// line (where `ps` would show it) and never printed, seeks a rated game of its game on the
// ladder, and plays the game it is paired into as a joined one (sides alternate: no --side).
// The join or seek asks to be pinged ("pings": true): the bot answers each {"type":"ping","id":N}
// with {"type":"pong","id":N} as soon as it reads it, so that the arena can tell the network's
// share of a reply's time from the bot's thinking.
//
// Tavern: a team scores when the rival's barrel reaches the team's home row (team1's is the
// bottom row, so team1 pushes south; team2 pushes north). Attackers get behind the rival's barrel
// and push it; defenders push their own barrel the same way, away from the rival's row.
// Thud: every turn lists every legal move with what it kills. Take the move that kills most;
// otherwise dwarfs keep together, out of the trolls' reach, and trolls close in on the dwarfs.

declare(strict_types=1);

// Every warning is a bug here: it stops what raised it, as an exception does (a turn's reply, the
// connection), instead of letting the bot go on with a wrong value.
set_error_handler(function (int $level, string $text, string $file, int $line): bool {
    if (!(error_reporting() & $level)) {
        return false; // silenced with @ on purpose
    }
    throw new ErrorException($text, 0, $level, $file, $line);
});

const USAGE = "usage: php bot.php [--host H] [--port N] [--game tavern|thud] [--simulation ID] "
    . "[--side dwarf|troll] [--nick NAME] [--seek [--bot NAME]]";
const PACED = -1; // what play returns when the arena asks to try again later (not an exit code)

function main(array $args): int
{
    $bot = getenv('TAVERN_BOT_NAME');
    $options = ['host' => '127.0.0.1', 'port' => '9000', 'game' => 'tavern', 'nick' => 'PHP bot',
                'bot' => $bot === false ? null : $bot, 'seek' => false];
    for ($i = 0; $i < count($args); $i++) {
        $key = preg_replace('/^--?/', '', $args[$i]);
        if ($key === 'seek') { // a flag: no value follows
            $options['seek'] = true;
            continue;
        }
        if (!in_array($key, ['host', 'port', 'game', 'simulation', 'side', 'nick', 'bot'], true)
            || $i + 1 >= count($args)) {
            fwrite(STDERR, USAGE . "\n");
            return 2;
        }
        $options[$key] = $args[++$i];
    }
    $key = getenv('TAVERN_BOT_KEY');
    if ($options['seek'] && ((string) $options['bot'] === '' || (string) $key === '')) {
        fwrite(STDERR, "--seek needs --bot NAME (or TAVERN_BOT_NAME) and the key in TAVERN_BOT_KEY\n");
        return 2;
    }
    if (!in_array($options['game'], ['tavern', 'thud'], true)) {
        fwrite(STDERR, "--game must be tavern or thud\n");
        return 2;
    }
    if (!ctype_digit($options['port'])) {
        fwrite(STDERR, "--port must be a number\n");
        return 2;
    }
    $game = $options['game'];
    if ($options['seek']) {
        $join = ['type' => 'seek', 'game' => $game, 'bot' => $options['bot'], 'key' => $key,
                 'rated' => true];
    } else {
        $join = ['type' => 'join-simulation', 'game' => $game, 'nick' => $options['nick'],
                 'simulationId' => $options['simulation'] ?? null];
        if (isset($options['side'])) {
            $join['side'] = $options['side'];
        }
    }
    if ($game === 'tavern') {
        $join['names'] = ['Gimli', 'Durin', 'Thorin', 'Balin', 'Dwalin'];
    }
    $join['pings'] = true; // pings time the network, so it is not charged as thinking
    // Too many key checks from this address wait at the arena: connect again and send the join
    // or seek again, after 1 s, then 2, 4... up to 30 s (a wrong key, or any other error, ends
    // the bot).
    $delay = 1;
    while (true) {
        $code = play("tcp://{$options['host']}:{$options['port']}", $game, $join);
        if ($code !== PACED) {
            return $code;
        }
        fwrite(STDERR, "trying again in $delay s\n");
        sleep($delay);
        $delay = min($delay * 2, 30);
    }
}

// Plays one game on a new connection: the process's exit code, or PACED.
function play(string $address, string $game, array $join): int
{
    $socket = @stream_socket_client($address, $errno, $error, 10);
    if ($socket === false) {
        fwrite(STDERR, "connection failed: $error\n");
        return 1;
    }
    try {
        send($socket, $join);
        $info = null; // our game-info: team (Tavern) or side (Thud), and the board's size
        while (true) {
            $line = fgets($socket);
            if ($line === false) {
                if (stream_get_meta_data($socket)['timed_out']) {
                    continue; // nothing for default_socket_timeout: a seek may wait longer
                }
                break;
            }
            if (trim($line) === '') {
                continue;
            }
            $message = json_decode($line, true);
            if (!is_array($message)) {
                fwrite(STDERR, "bad message from the arena: " . json_last_error_msg() . "\n");
                continue;
            }
            switch ($message['type'] ?? null) {
                case 'ping': // answered at once, never after thinking; the id stays an integer
                    send($socket, ['type' => 'pong', 'id' => $message['id'] ?? null]);
                    break;
                case 'game-info':
                    $info = $message;
                    echo "joined {$info['simulationId']} as ", $info['team'] ?? $info['side'], "\n";
                    break;
                case 'turn':
                    try {
                        $reply = $game === 'tavern'
                            ? tavern_reply($message['state'], $info)
                            : thud_reply($message['state']);
                    } catch (Throwable $bad) { // a state this bot does not understand
                        fwrite(STDERR, "bad turn: {$bad->getMessage()}\n");
                        break;
                    }
                    // Name the turn answered: a reply that arrives too late is then refused
                    // ("Stale turn") instead of being played as a later turn.
                    if (array_key_exists('turn', $message)) {
                        $reply['turn'] = $message['turn'];
                    }
                    send($socket, $reply);
                    break;
                case 'score':
                    echo "point for {$message['team']}\n";
                    break;
                case 'win-game':
                case 'loss-game':
                case 'draw-game':
                    echo $message['type'], ' ', json_encode($message['result'] ?? null), "\n";
                    return 0;
                case 'error':
                    fwrite(STDERR, "server error: {$message['message']} (" . ($message['reason'] ?? '') . ")\n");
                    if ($info === null) { // the join or seek failed: there is no game to wait for
                        return $message['message'] === 'Too many key checks' ? PACED : 1;
                    }
                    break;
            }
        }
        fwrite(STDERR, "connection closed before the game ended\n");
        return 1;
    } finally {
        fclose($socket);
    }
}

function send($socket, array $message): void
{
    $line = json_encode($message, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES) . "\n";
    if (fwrite($socket, $line) !== strlen($line)) {
        throw new RuntimeException('the connection is gone');
    }
}

// --- Dwarven Tavern ----------------------------------------------------------------------------

// Cells of the tavern and squares of the Thud board are [x, y]: x the column, y the row.
const STEPS = ['NORTH' => [0, -1], 'EAST' => [1, 0], 'SOUTH' => [0, 1], 'WEST' => [-1, 0]];

function plus(array $a, array $d): array { return [$a[0] + $d[0], $a[1] + $d[1]]; }
function minus(array $a, array $d): array { return [$a[0] - $d[0], $a[1] - $d[1]]; }
function distance(array $a, array $b): int { return abs($a[0] - $b[0]) + abs($a[1] - $b[1]); }
function coords(array $item): array { return [$item['coords']['x'], $item['coords']['y']]; }
function cell_key(array $cell): string { return $cell[0] . ',' . $cell[1]; }

// One order per dwarf. The 1st, 3rd and 5th dwarves attack: the nearest gets behind the rival's
// barrel and pushes, the others stand beside it. The 2nd and 4th defend: they push our barrel
// toward our own row, and once it cannot go further, stand where the rival would have to stand
// to push it back.
function tavern_reply(array $state, ?array $info): array
{
    if ($info === null) {
        throw new RuntimeException('a turn before game-info');
    }
    $team = $info['team'];
    [$width, $height] = [$info['width'], $info['height']];
    $first = $team === 'team1';
    [$rival, $push, $lastRow] = $first ? ['team2', 'SOUTH', $height - 2] : ['team1', 'NORTH', 1];
    $d = STEPS[$push];
    $own = coords($state['barrels'][$team]);
    $other = coords($state['barrels'][$rival]);
    $walls = [$own, $other]; // paths go around barrels
    $ownSafe = $own[1] === $lastRow;
    $dwarves = $state[$team];
    $goals = [];
    $pushes = [];
    foreach ([minus($other, $d), $ownSafe ? plus($own, $d) : minus($own, $d)] as $role => $goal) {
        $group = [];
        foreach ($dwarves as $i => $dwarf) {
            if ($i % 2 === $role) {
                $group[] = $dwarf;
            }
        }
        // Nearest first; ties go by their place in the group.
        $order = array_keys($group);
        usort($order, fn (int $a, int $b): int =>
            [distance(coords($group[$a]), $goal), $a] <=> [distance(coords($group[$b]), $goal), $b]);
        foreach ($order as $rank => $index) {
            $id = $group[$index]['id'];
            if ($rank === 0) {
                $goals[$id] = $goal;
                $pushes[$id] = $role === 0 || !$ownSafe;
                continue;
            }
            $offset = ($rank % 2 === 1 ? -1 : 1) * (1 + intdiv($rank, 2));
            $goals[$id] = [max(0, min($width - 1, $goal[0] + $offset)), $goal[1]];
        }
    }
    $pushing = [];
    $others = [];
    foreach ($dwarves as $dwarf) {
        $id = $dwarf['id'];
        $at = coords($dwarf);
        if ($at === $goals[$id] && ($pushes[$id] ?? false)) {
            $pushing[] = ['botId' => $id, 'type' => 'MOVE', 'direction' => $push];
        } elseif (($step = first_step($at, $goals[$id], $walls, $width, $height)) !== null) {
            $others[] = ['botId' => $id, 'type' => 'MOVE', 'direction' => $step];
        } else {
            $others[] = ['botId' => $id, 'type' => 'PASS'];
        }
    }
    // Pushers act first, before a teammate can walk into their square.
    return ['type' => 'player-turn', 'actions' => array_merge($pushing, $others)];
}

// The first move of a shortest path from start to goal around the walls, or null (none, or
// already there).
function first_step(array $start, array $goal, array $walls, int $width, int $height): ?string
{
    $first = [cell_key($start) => null];
    $queue = new SplQueue();
    $queue->enqueue($start);
    $blocked = array_flip(array_map('cell_key', $walls));
    while (!$queue->isEmpty()) {
        $cell = $queue->dequeue();
        if ($cell === $goal) {
            return $first[cell_key($cell)];
        }
        foreach (STEPS as $name => $step) {
            $next = plus($cell, $step);
            [$x, $y] = $next;
            $key = cell_key($next);
            if (array_key_exists($key, $first) || isset($blocked[$key]) || $x < 0 || $y < 0
                || $x >= $width || $y >= $height) {
                continue;
            }
            $first[$key] = $first[cell_key($cell)] ?? $name;
            $queue->enqueue($next);
        }
    }
    return null;
}

// --- Thud --------------------------------------------------------------------------------------

const NEIGHBOURS = [[-1, -1], [-1, 0], [-1, 1], [0, -1], [0, 1], [1, -1], [1, 0], [1, 1]];

// The move with the best value; kills count most.
function thud_reply(array $state): array
{
    $moves = $state['moves'];
    if ($moves === []) {
        return ['type' => 'player-turn', 'stop' => true]; // the arena ends such games itself
    }
    $troll = $state['side'] === 'troll';
    [$dwarfs, $trolls] = [$state['dwarfs'], $state['trolls']];
    $occupied = array_flip(array_map('cell_key', array_merge($dwarfs, $trolls)));
    // Where the opponent's lines reach next ply: trolls kill next to where they land, dwarfs are
    // hurled onto trolls.
    $reach = line_reach($troll ? $dwarfs : $trolls, $occupied);
    $best = null;
    $bestValue = null;
    foreach ($moves as $move) { // the first of equal values, as the other kits do
        $value = thud_value($troll, $move, $dwarfs, $trolls, $reach);
        if ($bestValue === null || $value > $bestValue) {
            [$best, $bestValue] = [$move, $value];
        }
    }
    $reply = ['type' => 'player-turn', 'move' => ['from' => $best['from'], 'to' => $best['to']]];
    // Accept peace when the opponent offers it and we are not behind.
    [$ours, $theirs] = [$state['score']['dwarfs'], $state['score']['trolls']];
    if ($troll) {
        [$ours, $theirs] = [$theirs, $ours];
    }
    if ($state['declared'][$troll ? 'dwarf' : 'troll']) {
        $reply['declare'] = $ours >= $theirs;
    }
    return $reply;
}

function thud_value(bool $troll, array $move, array $dwarfs, array $trolls, array $reach): int
{
    [$kills, $from, $to] = [$move['kills'], $move['from'], $move['to']];
    $value = 1000 * $kills;
    if ($troll) {
        if (isset($reach[cell_key($to)])) {
            $value -= 100; // a dwarf could be hurled onto it
        }
        return $value - nearest($to, $dwarfs); // close in
    }
    if ($kills === 0) {
        foreach (NEIGHBOURS as $d) {
            if (isset($reach[cell_key(plus($to, $d))])) {
                $value -= 100; // a troll could land next to it and kill it
                break;
            }
        }
    }
    $friends = 0; // lines that hurl
    foreach ($dwarfs as $dwarf) {
        if ($dwarf !== $from && chebyshev($dwarf, $to) === 1) {
            $friends++;
        }
    }
    return $value + 3 * $friends - 2 * abs(nearest($to, $trolls) - 3); // just out of reach
}

// Every empty square the pieces reach in one line move (keys "x,y"): the front piece of a line
// of n pieces moves up to n squares along it (a troll's walk or shove, a dwarf's hurl).
function line_reach(array $pieces, array $occupied): array
{
    $mine = array_flip(array_map('cell_key', $pieces));
    $reach = [];
    foreach ($pieces as $piece) {
        foreach (NEIGHBOURS as $d) {
            $line = 0;
            for ($back = $piece; isset($mine[cell_key($back)]); $back = minus($back, $d)) {
                $line++;
            }
            $at = $piece;
            for ($n = 0; $n < $line; $n++) {
                $at = plus($at, $d);
                if (isset($occupied[cell_key($at)]) || !on_board($at)) {
                    break;
                }
                $reach[cell_key($at)] = true;
            }
        }
    }
    return $reach;
}

// The 15x15 square with its corners cut, less the Thudstone in the middle.
function on_board(array $square): bool
{
    [$x, $y] = $square;
    return $x >= 0 && $y >= 0 && $x < 15 && $y < 15 && $x + $y >= 5 && 14 - $x + $y >= 5
        && $x + 14 - $y >= 5 && 28 - $x - $y >= 5 && $square !== [7, 7];
}

// The distance from a square to the nearest of pieces.
function nearest(array $square, array $pieces): int
{
    $best = 99;
    foreach ($pieces as $piece) {
        $best = min($best, chebyshev($square, $piece));
    }
    return $best;
}

function chebyshev(array $a, array $b): int { return max(abs($a[0] - $b[0]), abs($a[1] - $b[1])); }

exit(main(array_slice($argv, 1)));
