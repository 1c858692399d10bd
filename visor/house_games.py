"""The games of house players that pages start, against the arena's caps: a person (or a
/clients page) against a house player, and "Run a game" between two. What a page asks for is
checked here, with the pages' errors; the seats themselves are the server's
(``server.house_seats``)."""

from __future__ import annotations

from server.arena import Arena
from server.errors import BotError, Rejected
from server.games import GAMES
from server.games.base import HousePlayer
from server.house_seats import seat_house
from server.match import Match, Phase
from visor.errors import PageError


def house_player(game: str, name: str) -> HousePlayer:
    players = GAMES[game].house_players
    try:
        return players[name]
    except KeyError:
        known = ", ".join(players)
        raise Rejected(PageError.UNKNOWN_PLAYER, f"{game} house players are: {known}") from None


def seat_house_player(match: Match, name: str, seat_name: str, delay_s: float) -> None:
    """Seat the house player a page named in ``seat_name`` (the match starts if that filled
    it)."""
    player = house_player(match.codec.name, name)
    if seat_name not in player.sides:
        raise Rejected(PageError.WRONG_SIDE, f"{name} cannot play the {seat_name} seat")
    seat_house(match, player, seat_name, delay_s)


class HouseGames:
    """The games house players play, against the arena's caps: between two house players ("Run
    a game"), and of a person (or a /clients page) against one, by the address that started it.
    They are counted here, not found among every match: a flood of refused requests must not
    each cost a look at thousands of waiting simulations."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self._between: list[Match] = []
        self._against: list[tuple[Match, str]] = []  # and the address that started it

    def _prune(self) -> None:
        self._between = [match for match in self._between if match.phase is not Phase.FINISHED]
        self._against = [(m, a) for m, a in self._against if m.phase is not Phase.FINISHED]

    def check_against(self, address: str) -> None:
        """Raises ``Rejected`` unless ``address`` may start a game against a house player:
        few enough going, in all and from that address."""
        self._prune()
        most = self.arena.config.max_person_house_games_per_address
        if sum(started_by == address for _, started_by in self._against) >= most:
            raise Rejected(
                PageError.TOO_MANY_HOUSE_GAMES,
                f"at most {most} at once against house players from one address: finish one first",
            )
        most = self.arena.config.max_person_house_games
        if len(self._against) >= most:
            raise Rejected(
                PageError.TOO_MANY_HOUSE_GAMES,
                f"the arena plays at most {most} at once against house players: try again later",
            )

    def started_against(self, match: Match, address: str) -> None:
        """``address`` started ``match`` against a house player (``check_against`` allowed it)."""
        self._against.append((match, address))

    def run(self, game: str, names: list[str], delay_ms: int) -> Match:
        """The visor's "Run a game", if the arena runs few enough such games."""
        self._prune()
        self.arena.check_open()
        most = self.arena.config.max_house_games
        if len(self._between) >= most:
            raise Rejected(PageError.TOO_MANY_HOUSE_GAMES, f"the arena runs at most {most} at once")
        match = run_house_game(self.arena, game, names, delay_ms)
        self._between.append(match)
        return match


def run_house_game(arena: Arena, game: str, names: list[str], delay_ms: int) -> Match:
    """Two house players, a turn delay, a new match."""
    if game not in arena.games:
        raise Rejected(BotError.UNKNOWN_GAME, f"game must be one of: {', '.join(arena.games)}")
    seat_names = arena.codec(game).seat_names
    if len(names) != len(seat_names):
        raise Rejected(PageError.INVALID_PLAYERS, f"pick {len(seat_names)} players")
    players = [house_player(game, name) for name in names]
    for player, seat_name in zip(players, seat_names, strict=True):
        if seat_name not in player.sides:
            raise Rejected(PageError.WRONG_SIDE, f"{player.name} cannot play the {seat_name} seat")
    match = arena.open(game)
    for name, seat_name in zip(names, seat_names, strict=True):
        seat_house_player(match, name, seat_name, delay_ms / 1000)
    return match
