/* A Thud bot in C for isolated play: the compiled one of tests/test_hosted_ladder.py's hosted
   bots. It reads the arena's lines on its stdin and answers each turn on its stdout with the
   first legal move, as tests/bots/jailed.py's honest bot does; it ends with its game.

   Built as docs/hosting.md says for C:  cc -O2 -o bot hosted_thud.c -ljansson */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is(const char *type, const char *name) { return type && strcmp(type, name) == 0; }

int main(void) {
    char *line = NULL;
    size_t size = 0;
    int over = 0;
    while (!over && getline(&line, &size, stdin) != -1) {
        json_error_t error;
        json_t *message = json_loads(line, 0, &error);
        if (message == NULL) continue;
        const char *type = json_string_value(json_object_get(message, "type"));
        if (is(type, "turn")) {
            json_t *state = json_object_get(message, "state");
            json_t *move = json_array_get(json_object_get(state, "moves"), 0);
            json_t *reply = json_pack("{s:s, s:{s:O, s:O}, s:O}", "type", "player-turn", "move",
                                      "from", json_object_get(move, "from"), "to",
                                      json_object_get(move, "to"), "turn",
                                      json_object_get(message, "turn"));
            char *text = reply == NULL ? NULL : json_dumps(reply, JSON_COMPACT);
            if (text != NULL) {  /* none: a turn with no move, which it leaves unanswered */
                printf("%s\n", text);
                fflush(stdout);
                free(text);
            }
            json_decref(reply);
        }
        over = is(type, "win-game") || is(type, "loss-game") || is(type, "draw-game");
        json_decref(message);
    }
    free(line);
    return 0;
}
