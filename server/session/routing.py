"""A session's routing part: where a join goes when the match is another node's.

A join by id of a match played elsewhere, a rejoin of one, a seek paired into one, or a random
join that finds its match on another node (or the one the nodes agree is opened for the random
joins arriving at this moment), asks that node for the seat (``server.cluster``); the answers
come back here (``server.arena.RandomJoiner``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from server.commands import RandomJoin
from server.errors import Rejected
from server.games.base import JsonObject
from server.match import Match
from server.match_options import MatchOptions
from server.session.effects import CLOSE, Error

if TYPE_CHECKING:
    from server.session.core import Session


class Routing:
    """One client's seats asked of other nodes, and their answers."""

    def __init__(self, session: Session) -> None:
        self.session = session
        # The random join another node answers: its command, and its fields (identified).
        self._random_join: tuple[RandomJoin, JsonObject] | None = None
        self._claimed = False  # the random join went through the nodes' claim

    def reach(self, simulation_id: str, fields: JsonObject, rejoin: bool) -> bool:
        """Ask the node that plays ``simulation_id`` for the seat, if the arena has others."""
        session = self.session
        elsewhere = session.arena.elsewhere
        if elsewhere is None or not session.client.routes:
            return False
        session.asked(elsewhere.seat(self, simulation_id, fields, rejoin, session.client.kind))
        return True

    def random(self, command: RandomJoin, fields: JsonObject) -> None:
        """A random join: a waiting match here, else one on another node, else the one the
        nodes agree is opened for the random joins arriving at this moment."""
        session, game = self.session, command.game
        here = session.arena.waiting(game, fields)  # checks the request before any look-up
        elsewhere = session.arena.elsewhere
        if here is None and elsewhere is not None and session.client.routes:
            found = elsewhere.waiting(game, fields)
            if found is None:
                session.arena.check_open()  # a draining node claims no new simulation
            self._random_join = (command, fields)
            self._claimed = found is None
            if found is not None:
                session.asked(elsewhere.seat(self, found, fields, False, session.client.kind))
            else:
                session.asked(elsewhere.random_join(self, game, fields))
            return
        self._here(command, fields, None, here)

    def _here(
        self,
        command: RandomJoin,
        fields: JsonObject,
        new_id: str | None,
        waiting: Match | None = None,
    ) -> None:
        """Sit in a waiting match here, or in a new one (with ``new_id``, if the nodes agreed
        on it)."""
        session, game = self.session, command.game
        options = MatchOptions(
            seed=command.seed, creator=session.client.address, by_join=True, match_id=new_id
        )
        match = waiting or session.arena.waiting(game, fields)
        if match is None:
            session.arena.check_open()
            match = session.arena.open(game, options)
        session.sit_identified(match, fields)

    # --- another node's answers (server.arena.RandomJoiner) -----------------------------------
    def send_data(self, data: bytes) -> None:
        """The other node's match speaks to its seat: the match's path, straight to the
        channel, as a match played here writes to it (not the session's effects)."""
        self.session.channel.send_data(data)

    def remote_seated(self) -> None:
        self.session.given()

    def round_trip_s(self) -> float | None:
        session = self.session
        round_trip = session.client.round_trip
        return None if round_trip is None else round_trip.estimate_s(session.arena.clock.now())

    def remote_refused(self, message: str, reason: str | None) -> None:
        session = self.session
        session.lost()
        random_join = self._random_join
        elsewhere = session.arena.elsewhere
        paired_seek, session.ladder.paired_seek = session.ladder.paired_seek, None
        if paired_seek is not None and not session.gone:
            # The opponent left before this client came: the seek goes back to the pool.
            session.ladder.enqueue(*paired_seek)
        elif random_join is None or session.gone:
            session.say(Error(message, reason))
        elif not self._claimed and elsewhere is not None:
            # Taken meanwhile: the nodes agree on where the next one opens.
            self._claimed = True
            command, fields = random_join
            session.asked(elsewhere.random_join(self, command.game, fields))
        else:  # refused even so: it waits for a partner here
            self.open_here(None)

    def open_here(self, simulation_id: str | None) -> None:
        session = self.session
        session.lost()
        random_join, self._random_join = self._random_join, None
        if random_join is not None and not session.gone:
            try:
                self._here(*random_join, simulation_id)
            except Rejected as rejected:
                session.refused(rejected)

    def close(self) -> None:
        """The seat another node played was taken by a rejoin, or lost with its node."""
        self.session.lost()
        self.session.say(CLOSE)

    def ended(self) -> None:
        """The game another node played is over: its seat is kept (no longer playing) until
        the next, and the channel is closed (``Session.stays_connected``)."""
        self.session.say(CLOSE)
