"""League tables, as the Thud king-of-the-hill challenge keeps them, and ratings.

The challenge's rule: after each game, the winner gains the difference between the two sides'
scores and the loser loses it (a draw changes nothing). Each game's ``league`` rules say whether
it keeps one table per side (Thud: a dwarf bot and a troll bot each compete with their own kind)
or one table (Dwarven Tavern). Each bot
also gets an openskill rating per game, with its uncertainty: games are taken in the order they
finished, so the same records always give the same ratings.

A bot that crashed (its process ended before its game did, or it never joined) loses that game,
often at no cost in score: a Thud bot that crashes at once loses 32 to 32. So the tables count
each bot's crashes and timed-out turns, and rank a bot with fewer crashes above one with more,
whatever their scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from openskill.models import PlackettLuce

from server.games import GAMES
from server.games.base import JsonObject
from server.match import MatchEnd

GAME_OVER = "at the end of the game"
"""How the exit of a bot process that played its game to the end reads (tournaments write it)."""


def crashed(exit: str | None) -> bool:
    """Did a tournament bot's process end before its game did (or never join the game)?

    None is a seat without a recorded exit: a bot not run by a tournament, or an older record.
    """
    return exit is not None and not exit.endswith(GAME_OVER)


@dataclass(frozen=True, slots=True)
class GameResult:
    """One finished game: who sat where, who won, and the score by seat name."""

    game: str
    bots: tuple[str, str]  # by seat
    seat_names: tuple[str, str]
    winner: int | None  # seat index, None for a draw
    scores: tuple[int, int]  # by seat
    game_id: str = ""
    reason: str = ""  # why the game ended
    exits: tuple[str | None, str | None] = (None, None)  # how each seat's bot process ended
    timed_out_turns: tuple[int, int] = (0, 0)  # by seat: turns played for it when it was late
    pairing: str = ""  # its key in its tournament's schedule (server.tournament.schedule)

    def timeouts(self, seat: int) -> int:
        """The seat's turns that timed out, the one it forfeited by included."""
        forfeited = self.reason in (
            MatchEnd.TURN_TIMEOUT,
            MatchEnd.TOO_MANY_TIMEOUTS,
            MatchEnd.OUT_OF_TIME,
        ) and self.winner not in (
            seat,
            None,
        )
        return self.timed_out_turns[seat] + forfeited


@dataclass(slots=True)
class Standing:
    bot: str
    played: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0
    score: int = 0
    crashes: int = 0  # games its process ended before the game did, or that it never joined
    timeouts: int = 0  # its turns that timed out
    games: list[str] = field(default_factory=list)

    def to_wire(self) -> JsonObject:
        return {
            "bot": self.bot,
            "played": self.played,
            "wins": self.wins,
            "losses": self.losses,
            "draws": self.draws,
            "score": self.score,
            "crashes": self.crashes,
            "timeouts": self.timeouts,
            "games": self.games,
        }


@dataclass(frozen=True, slots=True)
class Rating:
    bot: str
    mu: float
    sigma: float

    @property
    def ordinal(self) -> float:
        """A conservative skill estimate (mu - 3 sigma), what the table is sorted by."""
        return self.mu - 3 * self.sigma

    def to_wire(self) -> JsonObject:
        return {"bot": self.bot, "mu": self.mu, "sigma": self.sigma, "ordinal": self.ordinal}


def tables(results: Iterable[GameResult]) -> dict[str, list[Standing]]:
    """Standings by table: a table per seat for a game that keeps them so (Thud's "dwarf" and
    "troll"), else one named after the game; in each, fewer crashes first, then the higher
    score."""
    standings: dict[str, dict[str, Standing]] = {}
    for result in results:
        difference = abs(result.scores[0] - result.scores[1])
        for seat in (0, 1):
            by_seat = GAMES[result.game].league.table_per_seat
            table = result.seat_names[seat] if by_seat else result.game
            bot = result.bots[seat]
            standing = standings.setdefault(table, {}).setdefault(bot, Standing(bot))
            standing.played += 1
            standing.crashes += crashed(result.exits[seat])
            standing.timeouts += result.timeouts(seat)
            standing.games.append(result.game_id)
            if result.winner is None:
                standing.draws += 1
            elif result.winner == seat:
                standing.wins += 1
                standing.score += difference
            else:
                standing.losses += 1
                standing.score -= difference
    return {
        table: sorted(rows.values(), key=lambda s: (s.crashes, -s.score, -s.wins, s.losses, s.bot))
        for table, rows in standings.items()
    }


def ratings(results: Sequence[GameResult]) -> list[Rating]:
    """Every bot's rating after the games in order, best first."""
    current: dict[str, Rating] = {}
    for result in results:
        before = tuple(current.get(bot) or Rating(bot, *NEW_RATING) for bot in result.bots)
        current[result.bots[0]], current[result.bots[1]] = rate_game(
            (before[0], before[1]), result.winner
        )
    return sorted(current.values(), key=lambda rating: (-rating.ordinal, rating.bot))


_MODEL = PlackettLuce()
NEW_RATING = (_MODEL.mu, _MODEL.sigma)  # a bot's rating before its first game


def rate_game(players: tuple[Rating, Rating], winner: int | None) -> tuple[Rating, Rating]:
    """Both ratings after one game between them (``winner``: a seat, None for a draw): the
    tournaments' tables and the ladder rate alike."""
    ranks: list[float] = (
        [1.0, 1.0] if winner is None else [1.0 if seat == winner else 2.0 for seat in (0, 1)]
    )
    teams = [[_MODEL.rating(mu=p.mu, sigma=p.sigma, name=p.bot)] for p in players]
    [[first], [second]] = _MODEL.rate(teams, ranks=ranks)
    return (
        Rating(players[0].bot, first.mu, first.sigma),
        Rating(players[1].bot, second.mu, second.sigma),
    )


@dataclass(slots=True)
class Meeting:
    """Every game between two bots: ``wins`` by bot, in the order of ``bots``."""

    bots: tuple[str, str]
    games: int = 0
    wins: list[int] = field(default_factory=lambda: [0, 0])
    draws: int = 0

    def to_wire(self) -> JsonObject:
        wins, draws = self.wins, self.draws
        return {"bots": list(self.bots), "games": self.games, "wins": wins, "draws": draws}


def head_to_head(results: Iterable[GameResult]) -> list[Meeting]:
    """Each pair of bots that met, whichever seats they had, in the order of their names."""
    meetings: dict[tuple[str, str], Meeting] = {}
    for result in results:
        pair = (min(result.bots), max(result.bots))
        if pair[0] == pair[1]:
            continue  # a bot against itself is nobody's head-to-head
        meeting = meetings.setdefault(pair, Meeting(pair))
        meeting.games += 1
        if result.winner is None:
            meeting.draws += 1
        else:
            meeting.wins[pair.index(result.bots[result.winner])] += 1
    return [meetings[pair] for pair in sorted(meetings)]


def league_to_wire(results: Sequence[GameResult]) -> JsonObject:
    return {
        "tables": {
            table: [standing.to_wire() for standing in rows]
            for table, rows in tables(results).items()
        },
        "ratings": [rating.to_wire() for rating in ratings(results)],
        "headToHead": [meeting.to_wire() for meeting in head_to_head(results)],
        "games": len(results),
    }


def format_tables(results: Sequence[GameResult]) -> str:
    """The league as text, as the challenge printed it: one table per side."""
    lines: list[str] = []
    for table, rows in tables(results).items():
        lines.append(f"\n{table} table")
        lines.append(
            f"  {'bot':<28} {'played':>6} {'wins':>5} {'losses':>6} {'draws':>5} {'score':>6} "
            f"{'crashes':>7} {'timeouts':>8}"
        )
        for standing in rows:
            lines.append(
                f"  {standing.bot:<28} {standing.played:>6} {standing.wins:>5} "
                f"{standing.losses:>6} {standing.draws:>5} {standing.score:>6} "
                f"{standing.crashes:>7} {standing.timeouts:>8}"
            )
    rated = ratings(results)
    if rated:
        lines.append("\nratings (openskill: mu ± sigma, sorted by mu - 3 sigma)")
        for rating in rated:
            lines.append(f"  {rating.bot:<28} {rating.mu:6.2f} ± {rating.sigma:5.2f}")
    return "\n".join(lines)
