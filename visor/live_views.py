"""The live matches as pages see them, kept from the arena's updates (``visor.hub``)."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from dataclasses import replace

from server.clock import Clock
from server.match_views import MatchView, TurnResult


class LiveViews(MutableMapping[str, MatchView]):
    """Every live match as pages see it, by id: its view as the arena last sent it (seats, the
    start) with its latest turn folded in, when a page reads it (a snapshot, a lobby row).

    A turn is only stored as it came (``turn_played``): a game nobody watches costs the hub no
    view, no message and no reading of the clock per turn.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._views: dict[str, MatchView] = {}
        self._since: dict[str, float] = {}  # when each view's clock started (clock time)
        self._latest: dict[str, TurnResult] = {}  # the last turn played, by match
        self._replies: dict[str, list[int | None]] = {}  # each seat's last reply (ms), by match

    def turn_played(self, result: TurnResult) -> None:
        # Only the last turn is kept: the one before goes at once, with the position it holds
        # (the one this turn was played from, still in the processor's cache).
        replies = self._replies.get(result.match_id)
        if replies is not None:
            replies[result.seat] = result.reply_ms
            self._latest[result.match_id] = result

    def __getitem__(self, match_id: str) -> MatchView:
        view = self._views[match_id]
        latest = self._latest.get(match_id)
        if latest is not None and latest.number > view.turn:
            view = self._views[match_id] = replace(
                view, turn=latest.number, state=latest.state, clock=latest.clock
            )
        return view

    def __setitem__(self, match_id: str, view: MatchView) -> None:
        self._views[match_id] = view
        self._since[match_id] = self._clock.now()
        self._latest.pop(match_id, None)
        self._replies[match_id] = [None] * len(view.players)

    def __delitem__(self, match_id: str) -> None:
        del self._views[match_id]
        del self._since[match_id]
        self._latest.pop(match_id, None)
        del self._replies[match_id]

    def __contains__(self, match_id: object) -> bool:
        return match_id in self._views

    def __iter__(self) -> Iterator[str]:
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    def clock_since(self, match_id: str) -> float | None:
        """When the clock of the seat on move started (the clock's time), if it is live."""
        latest = self._latest.get(match_id)
        return latest.played_at if latest is not None else self._since.get(match_id)

    def replies_ms(self, match_id: str) -> dict[str, int]:
        """Each seat's last reply time, by seat name, once it has replied."""
        view = self._views.get(match_id)
        if view is None:
            return {}
        names = view.codec.seat_names
        replies = self._replies[match_id]
        return {names[seat]: ms for seat, ms in enumerate(replies) if ms is not None}
