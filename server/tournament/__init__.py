"""Tournaments: every entrant against every other, each bot a real process, a league at the end.

    tavern tournament FILE          # FILE is JSON or TOML; see docs/tournaments.md
    tavern tournament DIR           # Thud challenge clients: DIR/dwarf/*.js against DIR/troll/*.js

The tournament runs its own arena on a loopback port and records every game in the configured
records file. For each game it creates a simulation, starts each seat's bot (the command gets
``{host}``, ``{port}``, ``{simulation}``, ``{side}``, ``{seed}`` and ``{python}`` filled in, and
the same in ``TAVERN_*`` environment variables) under CPU and memory limits, keeps its stderr
with the game's record, and kills it when the game ends. A bot that crashes or goes silent loses
that game by the ordinary rules (disconnect, timeouts); one that never joins is replaced by a
seat that never answers, so it loses on time. Seats are filled one at a time, in seat order, so
even a bot that does not ask for a side gets the right one.

A tournament is identified by its name: running the same file again skips the games already
finished, so an interrupted tournament (Ctrl-C, a crash) resumes where it stopped.

A bot may be a Thud challenge client, a JavaScript class in a file (``"file"`` instead of
``"command"``): it plays through ``server/games/thud/web/thud-client.js`` under Node.js. A
folder holding such files in ``dwarf/`` and ``troll/`` is a tournament by itself, as the
challenge kept its clients.

The package is split by job: ``spec`` reads and checks a tournament (its file, or a folder of
clients), ``schedule`` says who plays whom, ``bots`` runs one bot as a process (as ``tavern
play`` and ``tavern validate`` do too), and ``runner`` plays the games on an arena of its own.
``server.tournament_queue`` spreads the same games over worker machines.
"""
