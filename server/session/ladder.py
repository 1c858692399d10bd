"""A session's ladder part: its seek in the pool (``server.ladder``) and its challenges
(``server.challenges``), and the registered bot it is present as.

It is what the pool and the challenge board call back (``SeekTaker``, ``Challenged``); it seats
its client through the session, as a join would."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from server.arena import Standing
from server.challenges import Challenge
from server.commands import NO_CHALLENGE, Accept, Decline, Seek
from server.commands import Challenge as ChallengeCommand
from server.errors import BotError, Rejected
from server.games.base import JsonObject
from server.ladder import Seeker
from server.league import NEW_RATING
from server.match import Match
from server.match_options import MatchOptions
from server.names import same_name
from server.seat_channel import SeatMessage
from server.session.effects import Error, Send

if TYPE_CHECKING:
    from server.session.core import Session

_SEEK_NUMBERS = itertools.count(1)


def seat_fields(fields: JsonObject) -> JsonObject:
    """A seek's or a challenge's fields as its seat takes them (the pairing gives the side)."""
    return {key: value for key, value in fields.items() if key not in ("side", "type")}


class Ladder:
    """One client's seek and challenges."""

    def __init__(self, session: Session) -> None:
        self.session = session
        # The seek waiting: its id, the command, its seat's fields (identified).
        self._seek: tuple[str, Seek, JsonObject] | None = None
        # A seek paired into another node's match, whose seat is asked for: it goes back to the
        # pool if the opponent left before this client came.
        self.paired_seek: tuple[Seek, JsonObject] | None = None
        self.standing: Standing | None = None  # the bot's, as its last seek was checked
        self.present: str | None = None  # the registered name it is present as (challenges)

    # --- seeks ---------------------------------------------------------------------------------
    @property
    def seeking(self) -> bool:
        """Its seek waits in the pool (not paired yet)."""
        return self._seek is not None

    def seek(self, command: Seek) -> None:
        """Wait in the pool for an opponent of about the same rating (``server.ladder``); the
        pairing seats the client as a join would (``paired``)."""
        try:
            fields = self.session.identified(command)
        except Rejected as rejected:
            self.session.refused(rejected)
            return
        self.enqueue(command, fields)

    def enqueue(self, command: Seek, fields: JsonObject) -> None:
        """A seek's checks, with fields already ``identified``, then its place in the pool."""
        session, arena = self.session, self.session.arena
        game, rated, bot = command.game, command.rated, session.bot
        try:
            session.check_free()
            arena.check_open()  # a draining node takes no seeks: its bots go to the others
            if rated and bot is None:
                raise Rejected(BotError.INVALID_SEEK, "rated games are for registered bots")
            arena.codec(game).player_from_join(fields)
            name = bot or str(fields.get("nick", "anonymous"))
            if bot is not None:
                self.check_bot(bot)
        except Rejected as rejected:
            session.refused(rejected)
            return
        self.stop_seeking()
        if bot is not None and self.standing is not None:
            last_opponent = self.standing.last_opponent
            had_first_seat = self.standing.had_first_seat
        else:
            last_opponent, had_first_seat = arena.last_game(name)
        seeker = Seeker(
            id=f"{session.client.address}/{next(_SEEK_NUMBERS)}",
            bot=name,
            game=game,
            rated=rated,
            rating=arena.roster.rating(game, name) or NEW_RATING[0],
            since=arena.clock.now(),
            last_opponent=last_opponent,
            had_first_seat=had_first_seat,
        )
        self._seek = (seeker.id, command, seat_fields(fields))
        session.stays = True
        try:
            arena.seek(seeker, self, session.client.address)
        except Rejected as rejected:
            self._seek = None
            session.refused(rejected)

    def paired(self, match: Match, seat: int) -> None:
        """The pool paired this client's seek: it takes ``seat`` of ``match``."""
        seek, self._seek = self._seek, None
        if seek is None or self.session.gone:
            return
        try:
            self.session.sit_identified(match, seek[2], seat)
        except Rejected as rejected:
            self.session.refused(rejected)

    def paired_elsewhere(self, simulation_id: str) -> None:
        """The pool paired this client's seek into a match another node plays."""
        seek, self._seek = self._seek, None
        if seek is not None and not self.session.gone:
            self.paired_seek = (seek[1], seek[2])
            self.session.routing.reach(simulation_id, seek[2], False)

    def stop_seeking(self) -> bool:
        """Withdraw the seek waiting, if any (a page's Cancel): whether there was one."""
        seek, self._seek = self._seek, None
        if seek is not None:
            self.session.arena.unseek(seek[0])
        return seek is not None

    def check_bot(self, bot: str) -> None:
        """A registered bot may seek or challenge unless banned or at its games' limit: the
        games and seeks it holds on every node, as its command was checked (this client's
        own seek aside, which a new one replaces)."""
        arena = self.session.arena
        registered = arena.roster.get(bot)
        if registered is not None and registered.banned:
            raise Rejected(BotError.BOT_BANNED, f"{bot} is banned from the ladder")
        most = arena.config.max_games_per_bot
        held = arena.bot_games(bot) if self.standing is None else self.standing.games
        if held - (1 if self.seeking else 0) >= most:
            raise Rejected(BotError.TOO_MANY_GAMES, f"a bot may play {most} games at once")

    # --- presence -------------------------------------------------------------------------------
    def present_as(self, bot: str) -> None:
        """Its command proved it is ``bot``: challenges find it here (and through the other
        nodes), as one bot at a time."""
        arena, session = self.session.arena, self.session
        if self.present is not None and self.present.casefold() != bot.casefold():
            arena.challenges.gone(self.present, self)
        self.present = bot
        arena.challenges.here(bot, self)
        if arena.elsewhere is not None and session.client.routes:
            arena.elsewhere.present(bot)

    def gone(self) -> None:
        """The client is gone: its seek is withdrawn, and challenges find it no more."""
        self.stop_seeking()
        if self.present is not None:
            self.session.arena.challenges.gone(self.present, self)

    # --- challenges (server.challenges) ---------------------------------------------------------
    @property
    def free(self) -> bool:
        return not self.session.gone and not self.session.in_game

    def challenge(self, command: ChallengeCommand) -> None:
        """Challenge a registered bot by name, wherever it is present."""
        session, arena = self.session, self.session.arena
        game, opponent, rated, side = command.game, command.opponent, command.rated, command.side
        try:
            fields = session.identified(command)
            session.check_free()
            arena.check_open()
            bot = session.bot
            if bot is None:
                raise Rejected(BotError.INVALID_CHALLENGE, "challenges are for registered bots")
            self.check_bot(bot)
            if same_name(opponent, bot):
                raise Rejected(BotError.INVALID_CHALLENGE, '"opponent" must name another bot')
            if arena.roster.get(opponent) is None:  # every node knows every registered bot
                raise Rejected(BotError.UNKNOWN_BOT, f"no bot named {opponent} is registered")
            board = arena.challenges
            challenge = Challenge(
                id=board.new_id(),
                challenger=bot,
                opponent=opponent,
                game=game,
                seat=None if side is None else arena.codec(game).seat_names.index(side),
                rated=rated,
                fields=seat_fields(fields),
                answer=lambda simulation_id, reason: self._answered(
                    challenge, simulation_id, reason
                ),
            )
            board.send(challenge)  # past the sender's cap: refused, and nothing is sent
        except Rejected as rejected:
            session.refused(rejected)
            return
        sent = {"type": "challenge-sent", "challenge": challenge.id, "opponent": opponent}
        session.say(Send(SeatMessage(sent)))
        target = board.find(opponent)
        if target is not None:
            board.offer(challenge, target)
        elif arena.elsewhere is not None and session.client.routes:
            arena.elsewhere.challenge(challenge)
        else:
            self._answered(challenge, None, f"{opponent} is not connected")

    def barred(self, message: str, reason: str) -> None:
        """The bot this client proved it is was banned, or its key revoked or replaced
        (``server.challenges.ChallengeBoard.barred``): its seek is withdrawn (and a pairing
        whose game never began goes back to the pool no more); it is told, unless it is
        playing, and its game is played to its end; its next seek or challenge is checked
        afresh (and refused)."""
        session = self.session
        session.bot = None
        self.paired_seek = None
        if not session.gone and (self.stop_seeking() or not session.in_game):
            session.say(Error(message, reason))

    def challenged(self, challenge: Challenge) -> None:
        codec = self.session.arena.codec(challenge.game)
        self.session.say(Send(SeatMessage(challenge.to_wire(codec.seat_names, codec.seat_field))))

    def accept(self, command: Accept) -> None:
        """Accept a challenge sent to this client: the match opens here, and the challenger
        is seated in it wherever it is connected."""
        session, arena = self.session, self.session.arena
        challenge = arena.challenges.take(command.challenge, self)
        try:
            if challenge is None:
                raise Rejected(BotError.UNKNOWN_CHALLENGE, NO_CHALLENGE)
            session.check_free()
            arena.check_open()
            match = arena.open(challenge.game, MatchOptions(rated=challenge.rated, by_join=True))
            fields = {**command.fields, "bot": session.bot, "nick": session.bot}
            session.sit_identified(match, fields, 1 - (challenge.seat or 0))
        except Rejected as rejected:
            session.refused(rejected)
            if challenge is not None:
                challenge.answer(None, f"{challenge.opponent} could not accept: {rejected.reason}")
            return
        challenge.answer(match.id, None)

    def decline(self, command: Decline) -> None:
        challenge = self.session.arena.challenges.take(command.challenge, self)
        if challenge is None:
            self.session.say(Error(BotError.UNKNOWN_CHALLENGE, NO_CHALLENGE))
            return
        challenge.answer(None, command.reason)

    def _answered(
        self, challenge: Challenge, simulation_id: str | None, reason: str | None
    ) -> None:
        """The challenged bot answered (or did not in time): sit in its match, or hear why not."""
        session = self.session
        session.arena.challenges.answered(challenge)
        if session.gone:
            return
        if simulation_id is None:
            declined = {"type": "challenge-declined", "challenge": challenge.id, "reason": reason}
            session.say(Send(SeatMessage(declined)))
            return
        match = session.arena.get(simulation_id)
        try:
            session.check_free()
            if match is None:
                session.routing.reach(simulation_id, challenge.fields, False)
            else:
                session.sit_identified(match, challenge.fields, challenge.seat or 0)
        except Rejected as rejected:
            session.refused(rejected)
