# A starter bot for Dwarven Tavern Arena that plays both games, in one Ruby file, standard library
# only (Ruby 3; Debian: apt-get install ruby).
#
#   ruby bot.rb --game thud [--side troll] [--simulation ID] [--host H] [--port N] [--nick NAME]
#   TAVERN_BOT_KEY=... ruby bot.rb --game thud --seek [--bot NAME] [--host H] [--port N]
#
# The arena and the bot exchange JSON objects, one per line (docs/protocol.md). Without
# --simulation the bot joins a random waiting simulation of its game, or creates one and waits.
# With --seek it is a registered bot (`tavern bots add NAME`, docs/ladder.md): it names itself
# with --bot NAME (or TAVERN_BOT_NAME) and the key from TAVERN_BOT_KEY, never from the command
# line (where `ps` would show it) and never printed, seeks a rated game of its game on the
# ladder, and plays the game it is paired into as a joined one (sides alternate: no --side).
# The join or seek asks to be pinged ("pings": true): the bot answers each {"type":"ping","id":N}
# with {"type":"pong","id":N} as soon as it reads it, so that the arena can tell the network's
# share of a reply's time from the bot's thinking.
#
# Tavern: a team scores when the rival's barrel reaches the team's home row (team1's is the
# bottom row, so team1 pushes south; team2 pushes north). Attackers get behind the rival's barrel
# and push it; defenders push their own barrel the same way, away from the rival's row.
# Thud: every turn lists every legal move with what it kills. Take the move that kills most;
# otherwise dwarfs keep together, out of the trolls' reach, and trolls close in on the dwarfs.
require "json"
require "set"
require "socket"

USAGE = "usage: ruby bot.rb [--host H] [--port N] [--game tavern|thud] [--simulation ID] " \
        "[--side dwarf|troll] [--nick NAME] [--seek [--bot NAME]]"

def main(args)
  options = { "host" => "127.0.0.1", "port" => "9000", "game" => "tavern", "nick" => "Ruby bot",
              "bot" => ENV.fetch("TAVERN_BOT_NAME", nil) }
  rest = args.dup
  until rest.empty?
    key = rest.shift.sub(/\A--?/, "")
    if key == "seek" # a flag: no value follows
      options["seek"] = true
      next
    end
    value = rest.shift
    unless %w[host port game simulation side nick bot].include?(key) && value
      warn USAGE
      return 2
    end
    options[key] = value
  end
  if options["seek"] && [options["bot"], ENV.fetch("TAVERN_BOT_KEY", nil)].any? { |v| v.to_s.empty? }
    warn "--seek needs --bot NAME (or TAVERN_BOT_NAME) and the key in TAVERN_BOT_KEY"
    return 2
  end
  unless %w[tavern thud].include?(options["game"])
    warn "--game must be tavern or thud"
    return 2
  end
  port = Integer(options["port"], 10, exception: false)
  unless port
    warn "--port must be a number"
    return 2
  end
  $stdout.sync = true # each line as it happens, even into a pipe
  # Too many key checks from this address wait at the arena: connect again and send the join or
  # seek again, after 1 s, then 2, 4... up to 30 s (a wrong key, or any other error, ends the bot).
  delay = 1
  loop do
    code = play_connected(options, port)
    return code unless code == :paced

    warn "trying again in #{delay} s"
    sleep delay
    delay = [delay * 2, 30].min
  end
end

# Plays one game on a new connection: the process's exit code, or :paced.
def play_connected(options, port)
  socket = TCPSocket.new(options["host"], port)
  begin
    play(socket, options)
  ensure
    socket.close
  end
rescue SystemCallError, IOError, SocketError => e
  warn "connection failed: #{e.message}"
  1
end

# Plays one game on a connected socket; the process's exit code, or :paced.
def play(socket, options)
  game = options["game"]
  join = if options["seek"]
           { "type" => "seek", "game" => game, "bot" => options["bot"],
             "key" => ENV.fetch("TAVERN_BOT_KEY"), "rated" => true }
         else
           { "type" => "join-simulation", "game" => game, "nick" => options["nick"],
             "simulationId" => options["simulation"], "side" => options["side"] }.compact
         end
  join["names"] = %w[Gimli Durin Thorin Balin Dwalin] if game == "tavern"
  join["pings"] = true # pings time the network, so it is not charged as thinking
  send_message(socket, join)

  info = nil # our game-info: team (Tavern) or side (Thud), and the board's size
  while (line = socket.gets)
    next if line.strip.empty?

    begin
      message = JSON.parse(line)
      raise JSON::ParserError, "not an object" unless message.is_a?(Hash)
    rescue JSON::ParserError => e
      warn "bad message from the arena: #{e.message}"
      next
    end
    case message["type"]
    when "ping" # answered at once, never after thinking (sockets write through: no flush needed)
      send_message(socket, { "type" => "pong", "id" => message["id"] })
    when "game-info"
      info = message
      puts "joined #{info['simulationId']} as #{info['team'] || info['side']}"
    when "turn"
      begin
        reply = game == "tavern" ? tavern_reply(message["state"], info) : thud_reply(message["state"])
      rescue StandardError => e # a state this bot does not understand: say so, wait for the next
        warn "bad turn: #{e.message}"
        next
      end
      # Name the turn answered: a reply that arrives too late is then refused ("Stale turn")
      # instead of being played as a later turn.
      reply["turn"] = message["turn"] if message.key?("turn")
      send_message(socket, reply)
    when "score"
      puts "point for #{message['team']}"
    when "win-game", "loss-game", "draw-game"
      puts "#{message['type']} #{JSON.generate(message['result'])}"
      return 0
    when "error"
      warn "server error: #{message['message']} (#{message['reason']})"
      # The join or seek failed: there is no game to wait for.
      return message["message"] == "Too many key checks" ? :paced : 1 if info.nil?
    end
  end
  warn "connection closed before the game ended"
  1
end

def send_message(socket, message)
  socket.write("#{JSON.generate(message)}\n")
end

# --- Dwarven Tavern ----------------------------------------------------------------------------

# Cells of the tavern and squares of the Thud board are [x, y]: x the column, y the row.
STEPS = { "NORTH" => [0, -1], "EAST" => [1, 0], "SOUTH" => [0, 1], "WEST" => [-1, 0] }.freeze

def plus(a, d) = [a[0] + d[0], a[1] + d[1]]
def minus(a, d) = [a[0] - d[0], a[1] - d[1]]
def distance(a, b) = (a[0] - b[0]).abs + (a[1] - b[1]).abs
def coords(item) = [item.fetch("coords").fetch("x"), item.fetch("coords").fetch("y")]

# One order per dwarf. The 1st, 3rd and 5th dwarves attack: the nearest gets behind the rival's
# barrel and pushes, the others stand beside it. The 2nd and 4th defend: they push our barrel
# toward our own row, and once it cannot go further, stand where the rival would have to stand
# to push it back.
def tavern_reply(state, info)
  team = info&.fetch("team") or raise "a turn before game-info"
  width, height = info.fetch("width"), info.fetch("height")
  first = team == "team1"
  rival, push, last_row = first ? ["team2", "SOUTH", height - 2] : ["team1", "NORTH", 1]
  d = STEPS[push]
  own, other = coords(state["barrels"][team]), coords(state["barrels"][rival])
  walls = [own, other] # paths go around barrels
  own_safe = own[1] == last_row
  dwarves = state.fetch(team)
  goals, pushes = {}, {}
  [minus(other, d), own_safe ? plus(own, d) : minus(own, d)].each_with_index do |goal, role|
    group = dwarves.select.with_index { |_, i| i % 2 == role }
    # Nearest first; sort_by is not stable, so ties go by their place in the list.
    group = group.each_with_index.sort_by { |dwarf, i| [distance(coords(dwarf), goal), i] }.map(&:first)
    group.each_with_index do |dwarf, rank|
      id = dwarf.fetch("id")
      if rank.zero?
        goals[id], pushes[id] = goal, role.zero? || !own_safe
        next
      end
      offset = (rank.odd? ? -1 : 1) * (1 + rank / 2)
      goals[id] = [(goal[0] + offset).clamp(0, width - 1), goal[1]]
    end
  end
  pushing, others = [], []
  dwarves.each do |dwarf|
    id, at = dwarf.fetch("id"), coords(dwarf)
    if at == goals[id] && pushes[id]
      pushing << { "botId" => id, "type" => "MOVE", "direction" => push }
    elsif (step = first_step(at, goals[id], walls, width, height))
      others << { "botId" => id, "type" => "MOVE", "direction" => step }
    else
      others << { "botId" => id, "type" => "PASS" }
    end
  end
  # Pushers act first, before a teammate can walk into their square.
  { "type" => "player-turn", "actions" => pushing + others }
end

# The first move of a shortest path from start to goal around the walls, or nil (none, or
# already there).
def first_step(start, goal, walls, width, height)
  first = { start => nil }
  queue = [start]
  until queue.empty?
    cell = queue.shift
    return first[cell] if cell == goal

    STEPS.each do |name, step|
      following = plus(cell, step)
      x, y = following
      next if first.key?(following) || walls.include?(following) || x.negative? || y.negative? ||
              x >= width || y >= height

      first[following] = first[cell] || name
      queue << following
    end
  end
  nil
end

# --- Thud --------------------------------------------------------------------------------------

NEIGHBOURS = [-1, 0, 1].product([-1, 0, 1]) - [[0, 0]]

# The move with the best value; kills count most.
def thud_reply(state)
  moves = state.fetch("moves")
  return { "type" => "player-turn", "stop" => true } if moves.empty? # the arena ends such games itself

  troll = state.fetch("side") == "troll"
  dwarfs, trolls = state.fetch("dwarfs"), state.fetch("trolls")
  occupied = Set.new(dwarfs + trolls)
  # Where the opponent's lines reach next ply: trolls kill next to where they land, dwarfs are
  # hurled onto trolls.
  reach = line_reach(troll ? dwarfs : trolls, occupied)
  # max_by keeps the first of equal values, as the other kits do.
  best = moves.max_by.with_index { |move, i| [thud_value(troll, move, dwarfs, trolls, reach), -i] }
  reply = { "type" => "player-turn", "move" => { "from" => best.fetch("from"), "to" => best.fetch("to") } }
  # Accept peace when the opponent offers it and we are not behind.
  ours, theirs = state.fetch("score").values_at("dwarfs", "trolls")
  ours, theirs = theirs, ours if troll
  reply["declare"] = ours >= theirs if state.fetch("declared")[troll ? "dwarf" : "troll"]
  reply
end

def thud_value(troll, move, dwarfs, trolls, reach)
  kills, from, to = move.fetch("kills"), move.fetch("from"), move.fetch("to")
  value = 1000 * kills
  if troll
    value -= 100 if reach.include?(to) # a dwarf could be hurled onto it
    return value - nearest(to, dwarfs) # close in
  end
  if kills.zero? && NEIGHBOURS.any? { |d| reach.include?(plus(to, d)) }
    value -= 100 # a troll could land next to it and kill it
  end
  friends = dwarfs.count { |dwarf| dwarf != from && chebyshev(dwarf, to) == 1 } # lines that hurl
  value + 3 * friends - 2 * (nearest(to, trolls) - 3).abs # just out of reach
end

# Every empty square the pieces reach in one line move: the front piece of a line of n pieces
# moves up to n squares along it (a troll's walk or shove, a dwarf's hurl).
def line_reach(pieces, occupied)
  mine = Set.new(pieces)
  reach = Set.new
  pieces.each do |piece|
    NEIGHBOURS.each do |d|
      line = 0
      back = piece
      while mine.include?(back)
        line += 1
        back = minus(back, d)
      end
      at = piece
      line.times do
        at = plus(at, d)
        break if occupied.include?(at) || !on_board?(at)

        reach << at
      end
    end
  end
  reach
end

# The 15x15 square with its corners cut, less the Thudstone in the middle.
def on_board?(square)
  x, y = square
  x >= 0 && y >= 0 && x < 15 && y < 15 && x + y >= 5 && 14 - x + y >= 5 && x + 14 - y >= 5 &&
    28 - x - y >= 5 && square != [7, 7]
end

# The distance from a square to the nearest of pieces.
def nearest(square, pieces) = pieces.map { |piece| chebyshev(square, piece) }.min || 99

def chebyshev(a, b) = [(a[0] - b[0]).abs, (a[1] - b[1]).abs].max

exit(main(ARGV)) if $PROGRAM_NAME == __FILE__
