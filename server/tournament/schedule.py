"""Who plays whom: a tournament's games, each under a key that stays the same from run to run,
by which a resumed tournament (or a worker taking a queued game) knows a game already finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from server.games import GAMES
from server.tournament.spec import Entrant, TournamentSpec


@dataclass(frozen=True, slots=True)
class Pairing:
    number: int
    bots: tuple[Entrant, Entrant]  # by seat
    key: str  # stable across runs: how a resumed tournament recognises a finished game
    seed: int  # the game's seed


def schedule(spec: TournamentSpec) -> list[Pairing]:
    """Who plays whom, and on which side.

    Thud, as the challenge: every dwarf bot plays every troll bot once. A pair of bots that can
    both play either side meets once (the earlier-listed one as the dwarfs), or twice, once each
    way, with ``swap_sides``. Dwarven Tavern: every pair plays twice, once from each side. A
    match of two bots (``paired_games``, ``tavern match``) is pairs of games instead, each pair
    one seed with the sides swapped, so that what the seed favours cancels out.
    """
    seat_names = GAMES[spec.game].seat_names
    if spec.paired_games:
        return _paired(spec, seat_names)
    both_ways = spec.swap_sides or GAMES[spec.game].league.both_ways
    pairings: list[tuple[Entrant, Entrant]] = []
    entrants = spec.entrants
    for i, first in enumerate(entrants):
        for second in entrants[i + 1 :]:
            ways = [
                (a, b)
                for a, b in ((first, second), (second, first))
                if seat_names[0] in a.sides and seat_names[1] in b.sides
            ]
            pairings += ways if both_ways else ways[:1]
    return [
        Pairing(
            number,
            (a, b),
            f"{seat_names[0]}:{a.name} v {seat_names[1]}:{b.name}",
            spec.seed * 100_003 + number,
        )
        for number, (a, b) in enumerate(pairings, start=1)
    ]


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
