/* A starter bot for Dwarven Tavern Arena that plays both games, in one C file, with Jansson for
 * JSON (Debian: apt-get install gcc make pkg-config libjansson-dev).
 *
 *   make && ./bot --game thud [--side troll] [--simulation ID] [--host H] [--port N] [--nick NAME]
 *   TAVERN_BOT_KEY=... ./bot --game thud --seek [--bot NAME] [--host H] [--port N]
 *
 * The arena and the bot exchange JSON objects, one per line (docs/protocol.md). Without
 * --simulation the bot joins a random waiting simulation of its game, or creates one and waits.
 * With --seek it is a registered bot (`tavern bots add NAME`, docs/ladder.md): it names itself
 * with --bot NAME (or TAVERN_BOT_NAME) and the key from TAVERN_BOT_KEY, never from the command
 * line (where `ps` would show it) and never printed, seeks a rated game of its game on the
 * ladder, and plays the game it is paired into as a joined one (sides alternate: no --side).
 * The join or seek asks to be pinged ("pings": true): the bot answers each {"type":"ping","id":N}
 * with {"type":"pong","id":N} as soon as it reads it, so that the arena can tell the network's
 * share of a reply's time from the bot's thinking.
 *
 * Tavern: a team scores when the rival's barrel reaches the team's home row (team1's is the
 * bottom row, so team1 pushes south; team2 pushes north). Attackers get behind the rival's barrel
 * and push it; defenders push their own barrel the same way, away from the rival's row.
 * Thud: every turn lists every legal move with what it kills. Take the move that kills most;
 * otherwise dwarfs keep together, out of the trolls' reach, and trolls close in on the dwarfs.
 */
#define _POSIX_C_SOURCE 200809L

#include <jansson.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

/* A cell of the tavern or a square of the Thud board: x is the column, y the row. */
typedef struct {
    int x, y;
} Cell;

enum { NORTH, EAST, SOUTH, WEST };
static const char *const DIRECTIONS[] = {"NORTH", "EAST", "SOUTH", "WEST"};
static const Cell STEPS[] = {{0, -1}, {1, 0}, {0, 1}, {-1, 0}};

static Cell plus(Cell a, Cell d) { return (Cell){a.x + d.x, a.y + d.y}; }
static Cell minus(Cell a, Cell d) { return (Cell){a.x - d.x, a.y - d.y}; }
static bool same(Cell a, Cell b) { return a.x == b.x && a.y == b.y; }
static int distance(Cell a, Cell b) { return abs(a.x - b.x) + abs(a.y - b.y); }

static int chebyshev(Cell a, Cell b)
{
    int dx = abs(a.x - b.x), dy = abs(a.y - b.y);
    return dx > dy ? dx : dy;
}

static int clamp(int n, int low, int high) { return n < low ? low : n > high ? high : n; }

/* The string at key, or "" when there is none: the arena's messages are trusted, not assumed. */
static const char *text(json_t *object, const char *key)
{
    const char *value = json_string_value(json_object_get(object, key));
    return value != NULL ? value : "";
}

static int number(json_t *object, const char *key)
{
    return (int)json_integer_value(json_object_get(object, key));
}

/* --- the connection ------------------------------------------------------------------------ */

static int connect_to(const char *host, const char *port)
{
    struct addrinfo hints, *found;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int status = getaddrinfo(host, port, &hints, &found);
    if (status != 0) {
        fprintf(stderr, "cannot connect: %s\n", gai_strerror(status));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *at = found; at != NULL && fd < 0; at = at->ai_next) {
        fd = socket(at->ai_family, at->ai_socktype, at->ai_protocol);
        if (fd >= 0 && connect(fd, at->ai_addr, at->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0)
        perror("cannot connect");
    return fd;
}

/* Sends one message as one line; false when the connection is gone. */
static bool send_message(int fd, json_t *message)
{
    char *body = json_dumps(message, JSON_COMPACT);
    if (body == NULL)
        return false;
    size_t length = strlen(body);
    char *line = malloc(length + 2);
    if (line == NULL) {
        free(body);
        return false;
    }
    memcpy(line, body, length);
    line[length++] = '\n';
    free(body);
    size_t sent = 0;
    while (sent < length) {
        /* MSG_NOSIGNAL: a closed connection is an error here, not a SIGPIPE that kills the bot. */
        ssize_t n = send(fd, line + sent, length - sent, MSG_NOSIGNAL);
        if (n < 0)
            break;
        sent += (size_t)n;
    }
    free(line);
    if (sent < length)
        perror("cannot send");
    return sent == length;
}

/* --- Dwarven Tavern ------------------------------------------------------------------------ */

static bool read_coords(json_t *object, Cell *cell)
{
    json_t *coords = json_object_get(object, "coords");
    json_t *x = json_object_get(coords, "x"), *y = json_object_get(coords, "y");
    if (!json_is_integer(x) || !json_is_integer(y))
        return false;
    *cell = (Cell){(int)json_integer_value(x), (int)json_integer_value(y)};
    return true;
}

/* The first move of a shortest path from start to goal around the walls, or -1 (none, or
 * already there). A breadth-first search that tries the directions in the order N, E, S, W. */
static int first_step(Cell start, Cell goal, const Cell walls[2], int width, int height)
{
    size_t cells = (size_t)width * (size_t)height;
    int *first = malloc(cells * sizeof *first); /* -2 unseen, -1 the start, else a direction */
    Cell *queue = malloc(cells * sizeof *queue);
    int answer = -1;
    if (first == NULL || queue == NULL || start.x < 0 || start.y < 0 || start.x >= width ||
        start.y >= height)
        goto done;
    for (size_t i = 0; i < cells; i++)
        first[i] = -2;
    size_t head = 0, tail = 0;
    first[start.y * width + start.x] = -1;
    queue[tail++] = start;
    while (head < tail) {
        Cell cell = queue[head++];
        if (same(cell, goal)) {
            answer = first[cell.y * width + cell.x];
            goto done;
        }
        for (int direction = NORTH; direction <= WEST; direction++) {
            Cell next = plus(cell, STEPS[direction]);
            if (next.x < 0 || next.y < 0 || next.x >= width || next.y >= height ||
                first[next.y * width + next.x] != -2 || same(next, walls[0]) || same(next, walls[1]))
                continue;
            int from = first[cell.y * width + cell.x];
            first[next.y * width + next.x] = from == -1 ? direction : from;
            queue[tail++] = next;
        }
    }
done:
    free(first);
    free(queue);
    return answer;
}

static json_t *order(json_t *id, const char *type, int direction)
{
    json_t *action = json_pack("{s:O, s:s}", "botId", id, "type", type);
    if (direction >= 0)
        json_object_set_new(action, "direction", json_string(DIRECTIONS[direction]));
    return action;
}

/* One order per dwarf. The 1st, 3rd and 5th dwarves attack: the nearest gets behind the rival's
 * barrel and pushes, the others stand beside it. The 2nd and 4th defend: they push our barrel
 * toward our own row, and once it cannot go further, stand where the rival would have to stand
 * to push it back. NULL when the state is not one this bot understands. */
static json_t *tavern_reply(json_t *state, json_t *info)
{
    const char *team = text(info, "team");
    int width = number(info, "width"), height = number(info, "height");
    bool team1 = strcmp(team, "team1") == 0;
    if ((!team1 && strcmp(team, "team2") != 0) || width <= 0 || height <= 0)
        return NULL;
    int push = team1 ? SOUTH : NORTH, last_row = team1 ? height - 2 : 1;
    Cell d = STEPS[push], own, other;
    json_t *barrels = json_object_get(state, "barrels");
    json_t *dwarves = json_object_get(state, team);
    size_t count = json_array_size(dwarves);
    if (!read_coords(json_object_get(barrels, team), &own) ||
        !read_coords(json_object_get(barrels, team1 ? "team2" : "team1"), &other) || count == 0)
        return NULL;
    const Cell walls[2] = {own, other}; /* paths go around barrels */
    bool own_safe = own.y == last_row;
    const Cell role_goals[2] = {minus(other, d), own_safe ? plus(own, d) : minus(own, d)};

    Cell *at = malloc(count * sizeof *at), *goals = malloc(count * sizeof *goals);
    bool *pushes = calloc(count, sizeof *pushes);
    size_t *group = malloc(count * sizeof *group);
    json_t *reply = NULL;
    if (at == NULL || goals == NULL || pushes == NULL || group == NULL)
        goto done;
    for (size_t i = 0; i < count; i++) {
        if (!read_coords(json_array_get(dwarves, i), &at[i]))
            goto done;
    }
    for (int role = 0; role < 2; role++) {
        Cell goal = role_goals[role];
        size_t size = 0;
        for (size_t i = (size_t)role; i < count; i += 2) { /* nearest first; ties keep their order */
            size_t j = size++;
            for (; j > 0 && distance(at[group[j - 1]], goal) > distance(at[i], goal); j--)
                group[j] = group[j - 1];
            group[j] = i;
        }
        for (size_t rank = 0; rank < size; rank++) {
            if (rank == 0) {
                goals[group[0]] = goal;
                pushes[group[0]] = role == 0 || !own_safe;
                continue;
            }
            int offset = 1 + (int)rank / 2;
            if (rank % 2 == 1)
                offset = -offset;
            goals[group[rank]] = (Cell){clamp(goal.x + offset, 0, width - 1), goal.y};
        }
    }
    json_t *pushing = json_array(), *others = json_array();
    for (size_t i = 0; i < count; i++) {
        json_t *id = json_object_get(json_array_get(dwarves, i), "id");
        if (id == NULL) {
            json_decref(pushing);
            json_decref(others);
            goto done;
        }
        if (same(at[i], goals[i]) && pushes[i]) {
            json_array_append_new(pushing, order(id, "MOVE", push));
        } else {
            int step = first_step(at[i], goals[i], walls, width, height);
            json_array_append_new(others, order(id, step >= 0 ? "MOVE" : "PASS", step));
        }
    }
    /* Pushers act first, before a teammate can walk into their square. */
    json_array_extend(pushing, others);
    json_decref(others);
    reply = json_pack("{s:s, s:o}", "type", "player-turn", "actions", pushing);
done:
    free(at);
    free(goals);
    free(pushes);
    free(group);
    return reply;
}

/* --- Thud ---------------------------------------------------------------------------------- */

enum { SIZE = 15 };

/* A set of squares of the board. */
typedef struct {
    bool at[SIZE][SIZE];
} Squares;

typedef struct {
    size_t count;
    Cell at[SIZE * SIZE];
} Pieces;

static bool has(const Squares *set, Cell s)
{
    return s.x >= 0 && s.y >= 0 && s.x < SIZE && s.y < SIZE && set->at[s.x][s.y];
}

static void put(Squares *set, Cell s)
{
    if (s.x >= 0 && s.y >= 0 && s.x < SIZE && s.y < SIZE)
        set->at[s.x][s.y] = true;
}

/* The 15x15 square with its corners cut, less the Thudstone in the middle. */
static bool on_board(Cell s)
{
    int x = s.x, y = s.y;
    return x >= 0 && y >= 0 && x < SIZE && y < SIZE && x + y >= 5 && 14 - x + y >= 5 &&
           x + 14 - y >= 5 && 28 - x - y >= 5 && !(x == 7 && y == 7);
}

static bool read_square(json_t *xy, Cell *square)
{
    json_t *x = json_array_get(xy, 0), *y = json_array_get(xy, 1);
    if (!json_is_integer(x) || !json_is_integer(y))
        return false;
    *square = (Cell){(int)json_integer_value(x), (int)json_integer_value(y)};
    return true;
}

static bool read_pieces(json_t *list, Pieces *pieces)
{
    pieces->count = json_array_size(list);
    if (pieces->count > SIZE * SIZE)
        return false;
    for (size_t i = 0; i < pieces->count; i++) {
        if (!read_square(json_array_get(list, i), &pieces->at[i]))
            return false;
    }
    return true;
}

/* The distance from a square to the nearest of pieces. */
static int nearest(Cell square, const Pieces *pieces)
{
    int best = 99;
    for (size_t i = 0; i < pieces->count; i++) {
        int d = chebyshev(square, pieces->at[i]);
        if (d < best)
            best = d;
    }
    return best;
}

/* Every empty square the pieces reach in one line move: the front piece of a line of n pieces
 * moves up to n squares along it (a troll's walk or shove, a dwarf's hurl). */
static void line_reach(const Pieces *pieces, const Squares *occupied, Squares *reach)
{
    Squares mine = {0};
    for (size_t i = 0; i < pieces->count; i++)
        put(&mine, pieces->at[i]);
    for (size_t i = 0; i < pieces->count; i++) {
        for (int dx = -1; dx <= 1; dx++) {
            for (int dy = -1; dy <= 1; dy++) {
                if (dx == 0 && dy == 0)
                    continue;
                Cell d = {dx, dy}, at = pieces->at[i];
                int line = 0;
                for (Cell back = at; has(&mine, back); back = minus(back, d))
                    line++;
                for (int step = 1; step <= line; step++) {
                    at = plus(at, d);
                    if (has(occupied, at) || !on_board(at))
                        break;
                    put(reach, at);
                }
            }
        }
    }
}

static int thud_value(bool troll, Cell from, Cell to, int kills, const Pieces *dwarfs,
                      const Pieces *trolls, const Squares *reach)
{
    int value = 1000 * kills;
    if (troll) {
        if (has(reach, to))
            value -= 100; /* a dwarf could be hurled onto it */
        return value - nearest(to, dwarfs); /* close in */
    }
    bool unsafe = false;
    for (int dx = -1; dx <= 1; dx++) {
        for (int dy = -1; dy <= 1; dy++)
            unsafe = unsafe || ((dx != 0 || dy != 0) && has(reach, plus(to, (Cell){dx, dy})));
    }
    if (unsafe && kills == 0)
        value -= 100; /* a troll could land next to it and kill it */
    int friends = 0; /* dwarfs next to the square form the lines that hurl */
    for (size_t i = 0; i < dwarfs->count; i++) {
        if (!same(dwarfs->at[i], from) && chebyshev(dwarfs->at[i], to) == 1)
            friends++;
    }
    return value + 3 * friends - 2 * abs(nearest(to, trolls) - 3); /* just out of reach */
}

/* The move with the best value; kills count most. NULL when the state is not understood. */
static json_t *thud_reply(json_t *state)
{
    json_t *moves = json_object_get(state, "moves");
    if (!json_is_array(moves))
        return NULL;
    if (json_array_size(moves) == 0) /* the arena ends such games itself */
        return json_pack("{s:s, s:b}", "type", "player-turn", "stop", 1);
    bool troll = strcmp(text(state, "side"), "troll") == 0;
    Pieces dwarfs, trolls;
    if (!read_pieces(json_object_get(state, "dwarfs"), &dwarfs) ||
        !read_pieces(json_object_get(state, "trolls"), &trolls))
        return NULL;
    Squares occupied = {0}, reach = {0};
    for (size_t i = 0; i < dwarfs.count; i++)
        put(&occupied, dwarfs.at[i]);
    for (size_t i = 0; i < trolls.count; i++)
        put(&occupied, trolls.at[i]);
    /* Where the opponent's lines reach next ply: trolls kill next to where they land, dwarfs are
     * hurled onto trolls. */
    line_reach(troll ? &dwarfs : &trolls, &occupied, &reach);
    json_t *best = NULL;
    int best_value = 0;
    for (size_t i = 0; i < json_array_size(moves); i++) {
        json_t *move = json_array_get(moves, i);
        Cell from, to;
        if (!read_square(json_object_get(move, "from"), &from) ||
            !read_square(json_object_get(move, "to"), &to))
            return NULL;
        int value = thud_value(troll, from, to, number(move, "kills"), &dwarfs, &trolls, &reach);
        if (best == NULL || value > best_value) {
            best = move;
            best_value = value;
        }
    }
    json_t *reply = json_pack("{s:s, s:{s:O, s:O}}", "type", "player-turn", "move", "from",
                              json_object_get(best, "from"), "to", json_object_get(best, "to"));
    /* Accept peace when the opponent offers it and we are not behind. */
    json_t *score = json_object_get(state, "score");
    int ours = number(score, "dwarfs"), theirs = number(score, "trolls");
    if (troll) {
        int swap = ours;
        ours = theirs;
        theirs = swap;
    }
    if (json_is_true(json_object_get(json_object_get(state, "declared"), troll ? "dwarf" : "troll")))
        json_object_set_new(reply, "declare", json_boolean(ours >= theirs));
    return reply;
}

/* --- the game ------------------------------------------------------------------------------ */

static int usage(void)
{
    fprintf(stderr, "usage: bot [--host H] [--port N] [--game tavern|thud] [--simulation ID]"
                    " [--side dwarf|troll] [--nick NAME] [--seek [--bot NAME]]\n");
    return 2;
}

/* What play returns when the arena asked to try again later (not an exit code). */
enum { PACED = -2 };

/* Plays one game on a connected socket; the process's exit code, or PACED. */
static int play(int fd, const char *game, json_t *join)
{
    if (!send_message(fd, join))
        return 1;
    FILE *in = fdopen(fd, "r");
    if (in == NULL) {
        perror("cannot read");
        return 1;
    }
    json_t *info = NULL; /* our game-info: team (Tavern) or side (Thud), and the board's size */
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    int code = -1;
    while (code == -1 && (length = getline(&line, &capacity, in)) != -1) {
        if (strspn(line, " \t\r\n") == (size_t)length)
            continue;
        json_error_t error;
        json_t *message = json_loadb(line, (size_t)length, 0, &error);
        if (!json_is_object(message)) {
            fprintf(stderr, "bad message from the arena: %s\n", message ? "not an object" : error.text);
            json_decref(message);
            continue;
        }
        const char *type = text(message, "type");
        if (strcmp(type, "ping") == 0) {
            /* Answered at once, never after thinking: the arena times the connection's round
             * trip by it. The id goes back as it came, an integer. */
            json_t *pong = json_pack("{s:s, s:O}", "type", "pong", "id", json_object_get(message, "id"));
            if (pong != NULL && !send_message(fd, pong))
                code = 1;
            json_decref(pong);
        } else if (strcmp(type, "game-info") == 0) {
            json_decref(info);
            info = json_incref(message);
            printf("joined %s as %s%s\n", text(info, "simulationId"), text(info, "team"),
                   text(info, "side"));
        } else if (strcmp(type, "turn") == 0) {
            json_t *state = json_object_get(message, "state");
            json_t *reply = strcmp(game, "tavern") == 0 ? tavern_reply(state, info) : thud_reply(state);
            json_t *turn = json_object_get(message, "turn");
            if (reply == NULL) {
                fprintf(stderr, "bad turn: a state this bot does not understand\n");
            } else {
                /* Name the turn answered: a reply that arrives too late is then refused
                 * ("Stale turn") instead of being played as a later turn. */
                if (turn != NULL)
                    json_object_set(reply, "turn", turn);
                if (!send_message(fd, reply))
                    code = 1;
                json_decref(reply);
            }
        } else if (strcmp(type, "score") == 0) {
            printf("point for %s\n", text(message, "team"));
        } else if (strcmp(type, "win-game") == 0 || strcmp(type, "loss-game") == 0 ||
                   strcmp(type, "draw-game") == 0) {
            char *result = json_dumps(json_object_get(message, "result"), JSON_COMPACT | JSON_ENCODE_ANY);
            printf("%s %s\n", type, result != NULL ? result : "null");
            free(result);
            code = 0;
        } else if (strcmp(type, "error") == 0) {
            fprintf(stderr, "server error: %s (%s)\n", text(message, "message"), text(message, "reason"));
            if (info == NULL) /* the join or seek failed: there is no game to wait for */
                code = strcmp(text(message, "message"), "Too many key checks") == 0 ? PACED : 1;
        }
        json_decref(message);
    }
    if (code == -1) {
        fprintf(stderr, "connection closed before the game ended\n");
        code = 1;
    }
    free(line);
    json_decref(info);
    fclose(in);
    return code;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *port = "9000", *game = "tavern", *simulation = NULL,
               *side = NULL, *nick = "C bot", *bot = getenv("TAVERN_BOT_NAME");
    bool seek = false;
    for (int i = 1; i < argc; i += 2) {
        const char *key = argv[i] + strspn(argv[i], "-");
        if (strcmp(key, "seek") == 0) { /* a flag: no value follows */
            seek = true;
            i -= 1;
            continue;
        }
        if (i + 1 >= argc)
            return usage();
        const char *value = argv[i + 1];
        if (strcmp(key, "host") == 0)
            host = value;
        else if (strcmp(key, "port") == 0)
            port = value;
        else if (strcmp(key, "game") == 0)
            game = value;
        else if (strcmp(key, "simulation") == 0)
            simulation = value;
        else if (strcmp(key, "side") == 0)
            side = value;
        else if (strcmp(key, "nick") == 0)
            nick = value;
        else if (strcmp(key, "bot") == 0)
            bot = value;
        else
            return usage();
    }
    if (strcmp(game, "tavern") != 0 && strcmp(game, "thud") != 0) {
        fprintf(stderr, "--game must be tavern or thud\n");
        return 2;
    }
    if (port[0] == '\0' || port[strspn(port, "0123456789")] != '\0') {
        fprintf(stderr, "--port must be a number\n");
        return 2;
    }
    const char *secret = getenv("TAVERN_BOT_KEY");
    if (seek && (bot == NULL || bot[0] == '\0' || secret == NULL || secret[0] == '\0')) {
        fprintf(stderr, "--seek needs --bot NAME (or TAVERN_BOT_NAME) and the key in TAVERN_BOT_KEY\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it happens, even into a pipe */
    json_t *join = seek ? json_pack("{s:s, s:s, s:s, s:s, s:b}", "type", "seek", "game", game,
                                    "bot", bot, "key", secret, "rated", 1)
                        : json_pack("{s:s, s:s, s:s}", "type", "join-simulation", "game", game,
                                    "nick", nick);
    if (join == NULL) {
        fprintf(stderr, "--nick, --bot and TAVERN_BOT_KEY must be UTF-8\n");
        return 2;
    }
    /* The arena times the network by the pings, so as not to charge it as thinking. */
    json_object_set_new(join, "pings", json_true());
    if (simulation != NULL && !seek)
        json_object_set_new(join, "simulationId", json_string(simulation));
    if (strcmp(game, "tavern") == 0)
        json_object_set_new(join, "names",
                            json_pack("[s, s, s, s, s]", "Gimli", "Durin", "Thorin", "Balin", "Dwalin"));
    if (side != NULL && !seek)
        json_object_set_new(join, "side", json_string(side));
    /* Too many key checks from this address wait at the arena: connect again and send the join or
     * seek again, after 1 s, then 2, 4... up to 30 s (a wrong key, or any other error, ends the
     * bot). */
    unsigned delay = 1;
    int code;
    while (true) {
        int fd = connect_to(host, port);
        code = fd < 0 ? 1 : play(fd, game, join);
        if (code != PACED)
            break;
        fprintf(stderr, "trying again in %u s\n", delay);
        sleep(delay);
        delay = delay * 2 > 30 ? 30 : delay * 2;
    }
    json_decref(join);
    return code;
}
