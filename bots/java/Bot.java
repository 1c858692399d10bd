// A starter bot for Dwarven Tavern Arena that plays both games, in one file, JDK only (Java 17).
//
//   javac -d out Bot.java && java -cp out Bot --game thud [--side troll] [--simulation ID]
//       [--host H] [--port N] [--nick NAME]
//   TAVERN_BOT_KEY=... java -cp out Bot --game thud --seek [--bot NAME] [--host H] [--port N]
//
// The arena and the bot exchange JSON objects, one per line (docs/protocol.md); Java has no JSON
// in its standard library, so the class Json below reads and writes it. Without --simulation the
// bot joins a random waiting simulation of its game, or creates one and waits. With --seek it is
// a registered bot (`tavern bots add NAME`, docs/ladder.md): it names itself with --bot NAME (or
// TAVERN_BOT_NAME) and the key from TAVERN_BOT_KEY, never from the command line (where `ps`
// would show it) and never printed, seeks a rated game of its game on the ladder, and plays the
// game it is paired into as a joined one (sides alternate: no --side). The join or seek asks to
// be pinged ("pings": true): the bot answers each {"type":"ping","id":N} with
// {"type":"pong","id":N} as soon as it reads it, so that the arena can tell the network's share
// of a reply's time from the bot's thinking.
//
// Tavern: a team scores when the rival's barrel reaches the team's home row (team1's is the
// bottom row, so team1 pushes south; team2 pushes north). Attackers get behind the rival's barrel
// and push it; defenders push their own barrel the same way, away from the rival's row.
// Thud: every turn lists every legal move with what it kills. Take the move that kills most;
// otherwise dwarfs keep together, out of the trolls' reach, and trolls close in on the dwarfs.
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class Bot {
    public static void main(String[] args) {
        Map<String, String> options = new HashMap<>(Map.of(
                "host", "127.0.0.1", "port", "9000", "game", "tavern", "nick", "Java bot"));
        String bot = System.getenv("TAVERN_BOT_NAME");
        if (bot != null) options.put("bot", bot);
        for (int i = 0; i < args.length; i += 2) {
            String key = args[i].replaceFirst("^--?", "");
            if (key.equals("seek")) { // a flag: no value follows
                options.put("seek", "true");
                i -= 1;
                continue;
            }
            if (!List.of("host", "port", "game", "simulation", "side", "nick", "bot").contains(key)
                    || i + 1 >= args.length) {
                System.err.println("usage: java Bot [--host H] [--port N] [--game tavern|thud]"
                        + " [--simulation ID] [--side dwarf|troll] [--nick NAME] [--seek [--bot NAME]]");
                System.exit(2);
            }
            options.put(key, args[i + 1]);
        }
        String key = System.getenv("TAVERN_BOT_KEY");
        if (options.containsKey("seek") && (!options.containsKey("bot") || key == null || key.isEmpty())) {
            System.err.println("--seek needs --bot NAME (or TAVERN_BOT_NAME) and the key in TAVERN_BOT_KEY");
            System.exit(2);
        }
        String game = options.get("game");
        if (!game.equals("tavern") && !game.equals("thud")) {
            System.err.println("--game must be tavern or thud");
            System.exit(2);
        }
        // Too many key checks from this address wait at the arena: connect again and send the
        // join or seek again, after 1 s, then 2, 4... up to 30 s (a wrong key, or any other
        // error, ends the bot).
        long delayMs = 1000;
        while (true) {
            int code;
            try {
                code = play(options, game);
            } catch (IOException lost) {
                System.err.println("connection failed: " + lost);
                code = 1;
            }
            if (code != PACED) System.exit(code);
            System.err.println("trying again in " + delayMs / 1000 + " s");
            try {
                Thread.sleep(delayMs);
            } catch (InterruptedException stopped) {
                System.exit(1);
            }
            delayMs = Math.min(delayMs * 2, 30_000);
        }
    }

    /** What play returns when the arena asked to try again later (not an exit code). */
    static final int PACED = -1;

    /** Plays one game on a new connection: the process's exit code, or PACED. */
    static int play(Map<String, String> options, String game) throws IOException {
        try (Socket socket = new Socket(options.get("host"), Integer.parseInt(options.get("port")))) {
            BufferedReader in = new BufferedReader(
                    new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            OutputStream out = socket.getOutputStream();
            Map<String, Object> join = new LinkedHashMap<>();
            if (options.containsKey("seek")) {
                join.put("type", "seek");
                join.put("game", game);
                join.put("bot", options.get("bot"));
                join.put("key", System.getenv("TAVERN_BOT_KEY"));
                join.put("rated", true);
            } else {
                join.put("type", "join-simulation");
                join.put("game", game);
                join.put("nick", options.get("nick"));
                join.put("simulationId", options.get("simulation")); // null: a random join
                if (options.containsKey("side")) join.put("side", options.get("side"));
            }
            if (game.equals("tavern")) join.put("names", List.of("Gimli", "Durin", "Thorin", "Balin", "Dwalin"));
            join.put("pings", true); // the arena times the network by them, not to charge it as thinking
            send(out, join);

            Map<String, Object> info = null; // our game-info: team (Tavern) or side (Thud), board size
            for (String line; (line = in.readLine()) != null; ) {
                if (line.isBlank()) continue;
                Map<String, Object> message;
                try {
                    message = obj(Json.parse(line));
                } catch (RuntimeException bad) {
                    System.err.println("bad message from the arena: " + bad.getMessage());
                    continue;
                }
                switch (String.valueOf(message.get("type"))) {
                    case "ping" -> { // answered at once, never after thinking (send flushes)
                        Map<String, Object> pong = new LinkedHashMap<>();
                        pong.put("type", "pong");
                        pong.put("id", message.get("id")); // a Long: written back as the same integer
                        send(out, pong);
                    }
                    case "game-info" -> {
                        info = message;
                        Object seat = game.equals("tavern") ? info.get("team") : info.get("side");
                        System.out.println("joined " + info.get("simulationId") + " as " + seat);
                    }
                    case "turn" -> {
                        Map<String, Object> state = obj(message.get("state"));
                        Map<String, Object> reply = new LinkedHashMap<>(game.equals("tavern")
                                ? Map.of("type", "player-turn", "actions", tavernActions(state,
                                        (String) info.get("team"), num(info.get("width")), num(info.get("height"))))
                                : thudReply(state));
                        // Name the turn answered: a reply that arrives too late is then refused
                        // ("Stale turn") instead of being played as a later turn.
                        reply.put("turn", message.get("turn"));
                        send(out, reply);
                    }
                    case "score" -> System.out.println("point for " + message.get("team"));
                    case "win-game", "loss-game", "draw-game" -> {
                        System.out.println(message.get("type") + " " + Json.write(message.get("result")));
                        return 0;
                    }
                    case "error" -> {
                        System.err.println("server error: " + message.get("message") + " (" + message.get("reason") + ")");
                        if (info == null) { // the join or seek failed: no game to wait for
                            return "Too many key checks".equals(message.get("message")) ? PACED : 1;
                        }
                    }
                    default -> { }
                }
            }
            System.err.println("connection closed before the game ended");
            return 1;
        }
    }

    static void send(OutputStream out, Object message) throws IOException {
        out.write((Json.write(message) + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    // --- Dwarven Tavern -------------------------------------------------------------------------

    /** A cell of the tavern or a square of the Thud board: x is the column, y the row. */
    record Cell(int x, int y) {
        Cell plus(Cell d) { return new Cell(x + d.x, y + d.y); }
        Cell minus(Cell d) { return new Cell(x - d.x, y - d.y); }
        int distance(Cell o) { return Math.abs(x - o.x) + Math.abs(y - o.y); }
    }

    static final Map<String, Cell> STEPS = new LinkedHashMap<>();
    static {
        STEPS.put("NORTH", new Cell(0, -1));
        STEPS.put("EAST", new Cell(1, 0));
        STEPS.put("SOUTH", new Cell(0, 1));
        STEPS.put("WEST", new Cell(-1, 0));
    }

    static Cell cell(Object coords) {
        return new Cell(num(obj(coords).get("x")), num(obj(coords).get("y")));
    }

    /** One order per dwarf. The 1st, 3rd and 5th dwarves attack: the nearest gets behind the
     *  rival's barrel and pushes, the others stand beside it. The 2nd and 4th defend: they push
     *  our barrel toward our own row, and once it cannot go further, stand where the rival would
     *  have to stand to push it back. */
    static List<Object> tavernActions(Map<String, Object> state, String team, int width, int height) {
        boolean first = team.equals("team1");
        String rival = first ? "team2" : "team1", push = first ? "SOUTH" : "NORTH";
        Cell d = STEPS.get(push);
        Cell own = cell(obj(obj(state.get("barrels")).get(team)).get("coords"));
        Cell other = cell(obj(obj(state.get("barrels")).get(rival)).get("coords"));
        boolean ownSafe = own.y() == (first ? height - 2 : 1);
        Cell defend = ownSafe ? own.plus(d) : own.minus(d);
        List<Object> dwarves = arr(state.get(team));
        Map<Integer, Cell> goals = new HashMap<>();
        Map<Integer, Boolean> pushes = new HashMap<>();
        Cell[] roleGoals = {other.minus(d), defend};
        for (int role = 0; role < 2; role++) {
            Cell goal = roleGoals[role];
            List<Map<String, Object>> group = new ArrayList<>();
            for (int i = role; i < dwarves.size(); i += 2) group.add(obj(dwarves.get(i)));
            group.sort(Comparator.comparingInt(dwarf -> cell(dwarf.get("coords")).distance(goal)));
            for (int rank = 0; rank < group.size(); rank++) {
                int id = num(group.get(rank).get("id"));
                if (rank == 0) {
                    goals.put(id, goal);
                    pushes.put(id, role == 0 || !ownSafe);
                } else {
                    int offset = (rank % 2 == 1 ? -1 : 1) * (1 + rank / 2);
                    goals.put(id, new Cell(Math.max(0, Math.min(width - 1, goal.x() + offset)), goal.y()));
                }
            }
        }
        List<Object> pushing = new ArrayList<>(), others = new ArrayList<>();
        for (Object item : dwarves) {
            int id = num(obj(item).get("id"));
            Cell at = cell(obj(item).get("coords")), goal = goals.get(id);
            String step = firstStep(at, goal, List.of(own, other), width, height);
            if (at.equals(goal) && pushes.getOrDefault(id, false)) {
                pushing.add(Map.of("botId", id, "type", "MOVE", "direction", push));
            } else if (step != null) {
                others.add(Map.of("botId", id, "type", "MOVE", "direction", step));
            } else {
                others.add(Map.of("botId", id, "type", "PASS"));
            }
        }
        pushing.addAll(others); // pushers act first, before a teammate can walk into their square
        return pushing;
    }

    /** The first move of a shortest path from start to goal around the walls, or null. */
    static String firstStep(Cell start, Cell goal, List<Cell> walls, int width, int height) {
        Map<Cell, String> first = new HashMap<>();
        first.put(start, null);
        ArrayDeque<Cell> queue = new ArrayDeque<>(List.of(start));
        while (!queue.isEmpty()) {
            Cell at = queue.poll();
            if (at.equals(goal)) return first.get(at);
            for (Map.Entry<String, Cell> step : STEPS.entrySet()) {
                Cell next = at.plus(step.getValue());
                if (first.containsKey(next) || walls.contains(next) || next.x() < 0 || next.y() < 0
                        || next.x() >= width || next.y() >= height) continue;
                first.put(next, first.get(at) == null ? step.getKey() : first.get(at));
                queue.add(next);
            }
        }
        return null;
    }

    // --- Thud -----------------------------------------------------------------------------------

    static Cell square(Object xy) {
        return new Cell(num(arr(xy).get(0)), num(arr(xy).get(1)));
    }

    static List<Cell> squares(Object list) {
        return arr(list).stream().map(Bot::square).toList();
    }

    /** The move with the best value; kills count most. */
    static Map<String, Object> thudReply(Map<String, Object> state) {
        boolean troll = state.get("side").equals("troll");
        List<Cell> dwarfs = squares(state.get("dwarfs")), trolls = squares(state.get("trolls"));
        Set<Cell> occupied = new HashSet<>(dwarfs);
        occupied.addAll(trolls);
        // Where the opponent's lines reach next ply: trolls kill next to where they land, dwarfs
        // are hurled onto trolls.
        Set<Cell> reach = lineReach(troll ? dwarfs : trolls, occupied);
        Map<String, Object> best = null;
        int bestValue = Integer.MIN_VALUE;
        for (Object move : arr(state.get("moves"))) {
            int value = thudValue(troll, obj(move), dwarfs, trolls, reach);
            if (value > bestValue) {
                best = obj(move);
                bestValue = value;
            }
        }
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("type", "player-turn");
        if (best == null) {
            reply.put("stop", true); // no legal move (the arena ends such games itself)
            return reply;
        }
        reply.put("move", Map.of("from", best.get("from"), "to", best.get("to")));
        // Accept peace when the opponent offers it and we are not behind.
        int dwarfPoints = num(obj(state.get("score")).get("dwarfs"));
        int trollPoints = num(obj(state.get("score")).get("trolls"));
        if (Boolean.TRUE.equals(obj(state.get("declared")).get(troll ? "dwarf" : "troll"))) {
            reply.put("declare", troll ? trollPoints >= dwarfPoints : dwarfPoints >= trollPoints);
        }
        return reply;
    }

    static int thudValue(boolean troll, Map<String, Object> move, List<Cell> dwarfs, List<Cell> trolls,
                         Set<Cell> reach) {
        int kills = num(move.get("kills"));
        Cell from = square(move.get("from")), to = square(move.get("to"));
        int value = 1000 * kills;
        if (troll) {
            if (reach.contains(to)) value -= 100; // a dwarf could be hurled onto it
            return value - nearest(to, dwarfs); // close in
        }
        if (kills == 0 && neighbours(to).stream().anyMatch(reach::contains)) {
            value -= 100; // a troll could land next to it and kill it
        }
        int friends = 0; // dwarfs next to the square form the lines that hurl
        for (Cell dwarf : dwarfs) {
            if (!dwarf.equals(from) && chebyshev(dwarf, to) == 1) friends++;
        }
        return value + 3 * friends - 2 * Math.abs(nearest(to, trolls) - 3); // just out of reach
    }

    /** Every empty square the pieces reach in one line move: the front piece of a line of n
     *  pieces moves up to n squares along it (a troll's walk or shove, a dwarf's hurl). */
    static Set<Cell> lineReach(List<Cell> pieces, Set<Cell> occupied) {
        Set<Cell> mine = new HashSet<>(pieces), reach = new HashSet<>();
        for (Cell piece : pieces) {
            for (Cell d : neighbours(new Cell(0, 0))) {
                int line = 0;
                for (Cell at = piece; mine.contains(at); at = at.minus(d)) line++;
                Cell at = piece;
                for (int step = 1; step <= line; step++) {
                    at = at.plus(d);
                    if (occupied.contains(at) || !onBoard(at)) break;
                    reach.add(at);
                }
            }
        }
        return reach;
    }

    /** The 15x15 square with its corners cut, less the Thudstone in the middle. */
    static boolean onBoard(Cell s) {
        int x = s.x(), y = s.y();
        return x >= 0 && y >= 0 && x < 15 && y < 15 && x + y >= 5 && 14 - x + y >= 5 && x + 14 - y >= 5
                && 28 - x - y >= 5 && !(x == 7 && y == 7);
    }

    static List<Cell> neighbours(Cell s) {
        List<Cell> around = new ArrayList<>();
        for (int dx = -1; dx <= 1; dx++) {
            for (int dy = -1; dy <= 1; dy++) {
                if (dx != 0 || dy != 0) around.add(new Cell(s.x() + dx, s.y() + dy));
            }
        }
        return around;
    }

    /** The distance from a square to the nearest of pieces. */
    static int nearest(Cell square, List<Cell> pieces) {
        int best = 99;
        for (Cell piece : pieces) best = Math.min(best, chebyshev(square, piece));
        return best;
    }

    static int chebyshev(Cell a, Cell b) {
        return Math.max(Math.abs(a.x() - b.x()), Math.abs(a.y() - b.y()));
    }

    // --- JSON -----------------------------------------------------------------------------------

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Object value) { return (Map<String, Object>) value; }

    @SuppressWarnings("unchecked")
    static List<Object> arr(Object value) { return (List<Object>) value; }

    static int num(Object value) { return ((Number) value).intValue(); }

    /** JSON values as Java objects: Map (keys in order), List, String, Long or Double, Boolean, null. */
    static final class Json {
        private static final Pattern NUMBER = Pattern.compile("-?(?:0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");
        private final String text;
        private int at;

        private Json(String text) { this.text = text; }

        static Object parse(String text) {
            Json parser = new Json(text);
            Object value = parser.value();
            parser.space();
            if (parser.at != text.length()) throw parser.error("text after the value");
            return value;
        }

        private Object value() {
            space();
            if (at >= text.length()) throw error("unexpected end");
            char c = text.charAt(at);
            if (c == '{') {
                Map<String, Object> map = new LinkedHashMap<>();
                at++;
                if (skip('}')) return map;
                do {
                    space();
                    if (at >= text.length() || text.charAt(at) != '"') throw error("expected a key");
                    String key = string();
                    if (!skip(':')) throw error("expected ':'");
                    map.put(key, value());
                } while (skip(','));
                if (!skip('}')) throw error("expected ',' or '}'");
                return map;
            }
            if (c == '[') {
                List<Object> list = new ArrayList<>();
                at++;
                if (skip(']')) return list;
                do list.add(value()); while (skip(','));
                if (!skip(']')) throw error("expected ',' or ']'");
                return list;
            }
            if (c == '"') return string();
            if (text.startsWith("true", at)) { at += 4; return Boolean.TRUE; }
            if (text.startsWith("false", at)) { at += 5; return Boolean.FALSE; }
            if (text.startsWith("null", at)) { at += 4; return null; }
            Matcher number = NUMBER.matcher(text).region(at, text.length());
            if (!number.lookingAt()) throw error("unexpected character");
            at = number.end();
            if (number.group(1) == null && number.group(2) == null) {
                try {
                    return Long.parseLong(number.group());
                } catch (NumberFormatException tooBig) {
                    // falls through to a double
                }
            }
            return Double.parseDouble(number.group());
        }

        private String string() {
            StringBuilder out = new StringBuilder();
            at++; // the opening quote
            while (true) {
                if (at >= text.length()) throw error("unterminated string");
                char c = text.charAt(at++);
                if (c == '"') return out.toString();
                if (c < 0x20) throw error("control character in a string");
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (at >= text.length()) throw error("unterminated string");
                char e = text.charAt(at++);
                switch (e) {
                    case '"', '\\', '/' -> out.append(e);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        if (at + 4 > text.length() || !text.substring(at, at + 4).matches("[0-9a-fA-F]{4}")) {
                            throw error("bad \\u escape");
                        }
                        out.append((char) Integer.parseInt(text.substring(at, at + 4), 16)); // surrogates pair up
                        at += 4;
                    }
                    default -> throw error("bad escape");
                }
            }
        }

        private void space() {
            while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) at++;
        }

        private boolean skip(char c) {
            space();
            if (at < text.length() && text.charAt(at) == c) {
                at++;
                return true;
            }
            return false;
        }

        private IllegalArgumentException error(String what) {
            return new IllegalArgumentException("bad JSON at " + at + ": " + what);
        }

        static String write(Object value) {
            StringBuilder out = new StringBuilder();
            write(value, out);
            return out.toString();
        }

        private static void write(Object value, StringBuilder out) {
            if (value == null || value instanceof Boolean || value instanceof Integer || value instanceof Long) {
                out.append(value);
            } else if (value instanceof Number number) {
                double d = number.doubleValue();
                if (Double.isNaN(d) || Double.isInfinite(d)) throw new IllegalArgumentException("not a JSON number: " + d);
                out.append(d);
            } else if (value instanceof String string) {
                out.append('"');
                for (char c : string.toCharArray()) {
                    if (c == '"' || c == '\\') out.append('\\').append(c);
                    else if (c < 0x20 || c > 0x7e) out.append(String.format("\\u%04x", (int) c)); // ASCII out
                    else out.append(c);
                }
                out.append('"');
            } else if (value instanceof Map<?, ?> map) {
                out.append('{');
                String comma = "";
                for (Map.Entry<?, ?> entry : map.entrySet()) {
                    out.append(comma);
                    write(String.valueOf(entry.getKey()), out);
                    out.append(':');
                    write(entry.getValue(), out);
                    comma = ",";
                }
                out.append('}');
            } else if (value instanceof List<?> list) {
                out.append('[');
                for (int i = 0; i < list.size(); i++) {
                    if (i > 0) out.append(',');
                    write(list.get(i), out);
                }
                out.append(']');
            } else {
                throw new IllegalArgumentException("cannot write " + value.getClass() + " as JSON");
            }
        }
    }
}
