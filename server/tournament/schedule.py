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


def schedule(spec: TournamentSpec) -> list[Pairing]:
    """Who plays whom, and on which side.

    Thud, as the challenge: every dwarf bot plays every troll bot once. A pair of bots that can
    both play either side meets once (the earlier-listed one as the dwarfs), or twice, once each
    way, with ``swap_sides``. Dwarven Tavern: every pair plays twice, once from each side.
    """
    seat_names = GAMES[spec.game].seat_names
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
        Pairing(number, (a, b), f"{seat_names[0]}:{a.name} v {seat_names[1]}:{b.name}")
        for number, (a, b) in enumerate(pairings, start=1)
    ]


def describe_schedule(pairings: Sequence[Pairing]) -> str:
    return "\n".join(f"{pairing.number:>4}  {pairing.key}" for pairing in pairings)
