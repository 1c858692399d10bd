"""Who plays whom: a tournament's games, each under a key that stays the same from run to run,
by which a resumed tournament (or a worker taking a queued game) knows a game already finished.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from server.games import GAMES
from server.games.base import JsonObject
from server.league import GameResult
from server.tournament.formats import (
    Played,
    Round,
    arena_pairs,
    arena_points,
    gauntlet,
    knockout_first_round,
    knockout_winner,
    next_knockout_round,
    swiss_round,
    swiss_standings,
)
from server.tournament.spec import Entrant, TournamentSpec


@dataclass(frozen=True, slots=True)
class Pairing:
    number: int
    bots: tuple[Entrant, Entrant]  # by seat
    key: str  # stable across runs: how a resumed tournament recognises a finished game
    seed: int  # the game's seed


def schedule(spec: TournamentSpec) -> list[Pairing]:
    """Who plays whom, and on which side (a Swiss event: its first round).

    Thud, as the challenge: every dwarf bot plays every troll bot once. A pair of bots that can
    both play either side meets once (the earlier-listed one as the dwarfs), or twice, once each
    way, with ``swap_sides``. Dwarven Tavern: every pair plays twice, once from each side. A
    match of two bots (``paired_games``, ``tavern match``) is pairs of games instead, each pair
    one seed with the sides swapped, so that what the seed favours cancels out.
    """
    seat_names = GAMES[spec.game].seat_names
    if spec.paired_games:
        return _paired(spec, seat_names)
    if spec.format == "swiss":  # its first round: the next ones follow the results
        return swiss_rounds(spec, [])[0]
    if spec.format == "knockout":  # its first games: the next ones follow the results
        return knockout_games(spec, [])[0]
    if spec.format == "arena":  # its first games: then each bot again as soon as it is free
        names = [entrant.name for entrant in spec.entrants]
        return arena_pairings(spec, names, ArenaStanding({}, {}, Counter(), 0), 0)
    both_ways = spec.swap_sides or GAMES[spec.game].league.both_ways
    pairings: list[tuple[Entrant, Entrant]] = []
    entrants = spec.entrants
    if spec.format == "gauntlet":  # the first listed against each of the others
        by_name = {entrant.name: entrant for entrant in entrants}
        champion, field = entrants[0].name, [entrant.name for entrant in entrants[1:]]
        pairings = [
            (by_name[a], by_name[b])
            for a, b in gauntlet(champion, field, both_ways)
            if seat_names[0] in by_name[a].sides and seat_names[1] in by_name[b].sides
        ]
        return _numbered(spec, pairings, seat_names)
    for i, first in enumerate(entrants):
        for second in entrants[i + 1 :]:
            ways = [
                (a, b)
                for a, b in ((first, second), (second, first))
                if seat_names[0] in a.sides and seat_names[1] in b.sides
            ]
            pairings += ways if both_ways else ways[:1]
    return _numbered(spec, pairings, seat_names)


def _numbered(
    spec: TournamentSpec,
    pairings: Sequence[tuple[Entrant, Entrant]],
    seat_names: tuple[str, ...],
    first: int = 1,
    prefix: str = "",
) -> list[Pairing]:
    return [
        Pairing(
            number,
            (a, b),
            f"{prefix}{seat_names[0]}:{a.name} v {seat_names[1]}:{b.name}",
            spec.seed * 100_003 + number,
        )
        for number, (a, b) in enumerate(pairings, start=first)
    ]


def next_games(spec: TournamentSpec, results: Sequence[GameResult]) -> list[Pairing]:
    """A Swiss or knockout event's games to play next, paired from its results so far: the
    games of the round under way not played yet; none once the event is over."""
    if spec.format == "knockout":
        return knockout_games(spec, results)[0]
    done = {result.pairing for result in results}
    return [pairing for pairing in swiss_rounds(spec, results)[-1] if pairing.key not in done]


def swiss_rounds(spec: TournamentSpec, results: Sequence[GameResult]) -> list[list[Pairing]]:
    """A Swiss event's rounds as far as its results go: each round paired from the rounds
    before it (``server.tournament.formats.swiss_round``), the last one the round to play
    next (or the last round, once the event is over). Played again from the records' results,
    a resumed event pairs every round exactly as it did."""
    return _swiss(spec, results)[0]


def swiss_byes(spec: TournamentSpec, results: Sequence[GameResult]) -> list[str]:
    """Who had a bye in the rounds paired so far, round by round (a bye is a win)."""
    return _swiss(spec, results)[1]


def _swiss(
    spec: TournamentSpec, results: Sequence[GameResult]
) -> tuple[list[list[Pairing]], list[str]]:
    seat_names = GAMES[spec.game].seat_names
    by_name = {entrant.name: entrant for entrant in spec.entrants}
    names = list(by_name)
    by_key = {result.pairing: result for result in results}
    games: list[Played] = []
    byes: list[str] = []
    rounds: list[list[Pairing]] = []
    for number in range(1, spec.rounds + 1):
        paired: Round = swiss_round(names, games, byes)
        first = 1 + sum(len(done) for done in rounds)
        pairs = [(by_name[a], by_name[b]) for a, b in paired.pairs]
        rounds.append(_numbered(spec, pairs, seat_names, first, f"round {number}: "))
        if paired.bye is not None:
            byes.append(paired.bye)
        found = [by_key.get(pairing.key) for pairing in rounds[-1]]
        if any(result is None for result in found):
            break  # this round is the one to play
        games += [_played(result) for result in found if result is not None]
    return rounds, byes


def knockout_games(
    spec: TournamentSpec, results: Sequence[GameResult]
) -> tuple[list[Pairing], list[list[str]]]:
    """A knockout as far as its results go: the games to play next (none once it is over),
    and each round's winners so far. Round 1 is seeded as the bots are listed, byes to the top
    seeds (``server.tournament.formats``); a match is its first game, and on a draw its
    tie-break games, the sides swapped each time, up to ``spec.tie_breaks``, then the higher
    seed goes through. Played again from the records, a resumed knockout goes on as it was."""
    seat_names = GAMES[spec.game].seat_names
    by_name = {entrant.name: entrant for entrant in spec.entrants}
    by_key = {result.pairing: result for result in results}
    matches: list[tuple[str, str | None]] = list(knockout_first_round(list(by_name)))
    winners_by_round: list[list[str]] = []
    for number in range(1, len(by_name) + 1):
        todo: list[Pairing] = []
        winners: list[str] = []
        for match, (higher, lower) in enumerate(matches, start=1):
            if lower is None:  # a bye
                winners.append(higher)
                continue
            games: list[Played] = []
            for game in range(1, spec.tie_breaks + 2):
                first, second = (higher, lower) if game % 2 else (lower, higher)
                key = (f"round {number} match {match} game {game}: "
                       f"{seat_names[0]}:{first} v {seat_names[1]}:{second}")  # fmt: skip
                if key not in by_key:
                    seed_number = number * 10_000 + match * 100 + game
                    pairing = Pairing(seed_number, (by_name[first], by_name[second]), key,
                                      spec.seed * 100_003 + seed_number)  # fmt: skip
                    break
                games.append(_played(by_key[key]))
            winner = knockout_winner(higher, lower, games, spec.tie_breaks)
            if winner is None:
                todo.append(pairing)
            else:
                winners.append(winner)
        if todo:
            return todo, winners_by_round
        winners_by_round.append(winners)
        if len(winners) <= 1:
            break
        matches = list(next_knockout_round(winners))
    return [], winners_by_round


ARENA_KEY = "arena game "


@dataclass(frozen=True, slots=True)
class ArenaStanding:
    """An arena as far as its results go (its games in order): each bot's points (lichess's,
    with the streak), its last opponent, its first seats, and the last game's number."""

    points: dict[str, int]
    last_opponent: dict[str, str]
    firsts: Counter[str]
    last_number: int


def _arena_number(result: GameResult) -> int:
    return int(result.pairing.removeprefix(ARENA_KEY).split(":", 1)[0])


def arena_standing(spec: TournamentSpec, results: Sequence[GameResult]) -> ArenaStanding:
    names = [entrant.name for entrant in spec.entrants]
    played = sorted((r for r in results if r.pairing.startswith(ARENA_KEY)), key=_arena_number)
    scored: dict[str, list[float]] = {name: [] for name in names}
    last: dict[str, str] = {}
    firsts: Counter[str] = Counter()
    for result in played:
        game = _played(result)
        scored[game.first].append(game.score)
        scored[game.second].append(1.0 - game.score)
        last[game.first], last[game.second] = game.second, game.first
        firsts[game.first] += 1
    points = {name: arena_points(scores) for name, scores in scored.items()}
    return ArenaStanding(points, last, firsts, max(map(_arena_number, played), default=0))


def arena_pairings(
    spec: TournamentSpec, waiting: Sequence[str], standing: ArenaStanding, number: int
) -> list[Pairing]:
    """The games of the bots waiting now (``server.tournament.formats.arena_pairs``: by points,
    not again the last opponent while another waits), numbered after ``number``; who has sat
    first less often sits first."""
    seat_names = GAMES[spec.game].seat_names
    by_name = {entrant.name: entrant for entrant in spec.entrants}
    firsts = Counter(standing.firsts)
    pairings = []
    for a, b in arena_pairs(waiting, standing.points, standing.last_opponent):
        number += 1
        first, second = (a, b) if firsts[a] <= firsts[b] else (b, a)
        firsts[first] += 1
        key = f"{ARENA_KEY}{number}: {seat_names[0]}:{first} v {seat_names[1]}:{second}"
        pairing = Pairing(
            number, (by_name[first], by_name[second]), key, spec.seed * 100_003 + number
        )
        pairings.append(pairing)
    return pairings


def arena_table(spec: TournamentSpec, results: Sequence[GameResult]) -> str:
    """An arena's standings as ``tavern tournament`` prints them: by points."""
    standing = arena_standing(spec, results)
    games = Counter(bot for r in results if r.pairing.startswith(ARENA_KEY) for bot in r.bots)
    order = sorted(standing.points, key=lambda bot: (-standing.points[bot], -games[bot]))
    lines = [f"{'':>4} {'bot':<24} {'points':>6} {'games':>6}"]
    for place, bot in enumerate(order, start=1):
        lines.append(f"{place:>3}. {bot:<24} {standing.points[bot]:>6} {games[bot]:>6}")
    return "\n".join(lines)


def format_standings(spec: TournamentSpec, results: Sequence[GameResult]) -> JsonObject | None:
    """A Swiss, knockout or arena event's standings as ``/api/league`` gives them (None for a
    round robin or a gauntlet, whose league tables say it all): each row's bot and figures, by
    place; a knockout's winners round by round."""
    if spec.format == "swiss":
        names = [entrant.name for entrant in spec.entrants]
        games = [_played(result) for result in results]
        rows = swiss_standings(names, games, swiss_byes(spec, results))
        return {"format": "swiss", "rounds": spec.rounds, "rows": [
            {"bot": bot, "points": points, "buchholz": buchholz, "sonnebornBerger": berger}
            for bot, points, buchholz, berger in rows
        ]}  # fmt: skip
    if spec.format == "knockout":
        _, won = knockout_games(spec, results)
        champion = won[-1][0] if won and len(won[-1]) == 1 else None
        return {"format": "knockout", "rounds": won, "winner": champion}
    if spec.format == "arena":
        standing = arena_standing(spec, results)
        played = Counter(bot for r in results if r.pairing.startswith(ARENA_KEY) for bot in r.bots)
        order = sorted(standing.points, key=lambda bot: (-standing.points[bot], -played[bot]))
        return {"format": "arena", "rows": [
            {"bot": bot, "points": standing.points[bot], "games": played[bot]} for bot in order
        ]}  # fmt: skip
    return None


def knockout_table(spec: TournamentSpec, results: Sequence[GameResult]) -> str:
    """A knockout's rounds as ``tavern tournament`` prints them: who went through each."""
    _, rounds = knockout_games(spec, results)
    lines = [f"round {number}: {', '.join(won)}" for number, won in enumerate(rounds, start=1)]
    if rounds and len(rounds[-1]) == 1:
        lines.append(f"winner: {rounds[-1][0]}")
    return "\n".join(lines)


def swiss_table(spec: TournamentSpec, results: Sequence[GameResult]) -> str:
    """A Swiss event's standings as ``tavern tournament`` prints them: by points, then
    Buchholz, then Sonneborn-Berger (a bye counted a win)."""
    names = [entrant.name for entrant in spec.entrants]
    games = [_played(result) for result in results]
    rows = swiss_standings(names, games, swiss_byes(spec, results))
    lines = [f"{'':>4} {'bot':<24} {'points':>6} {'Buchholz':>8} {'S-B':>6}"]
    for place, (name, points, buchholz, berger) in enumerate(rows, start=1):
        lines.append(f"{place:>3}. {name:<24} {points:>6g} {buchholz:>8g} {berger:>6g}")
    return "\n".join(lines)


def _played(result: GameResult) -> Played:
    score = 0.5 if result.winner is None else (1.0 if result.winner == 0 else 0.0)
    return Played(result.bots[0], result.bots[1], score)


def _paired(spec: TournamentSpec, seat_names: tuple[str, ...]) -> list[Pairing]:
    """``paired_games`` games (an odd count rounded up), the first bot on the first seat in the
    first game of each pair."""
    first, second = spec.entrants
    pairings: list[Pairing] = []
    for pair in range(1, (spec.paired_games + 1) // 2 + 1):
        for a, b in ((first, second), (second, first)):
            number = len(pairings) + 1
            key = f"pair {pair}: {seat_names[0]}:{a.name} v {seat_names[1]}:{b.name}"
            pairings.append(Pairing(number, (a, b), key, spec.seed * 100_003 + pair))
    return pairings


def describe_schedule(pairings: Sequence[Pairing]) -> str:
    return "\n".join(f"{pairing.number:>4}  {pairing.key}" for pairing in pairings)
