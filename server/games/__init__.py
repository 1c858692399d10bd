"""The games the arena hosts, registered by name: each is a codec class around its rules."""

from __future__ import annotations

from server.games.base import AnyCodec
from server.games.tavern.codec import TavernCodec
from server.games.thud.codec import ThudCodec

GAMES: dict[str, type[AnyCodec]] = {TavernCodec.name: TavernCodec, ThudCodec.name: ThudCodec}
DEFAULT_GAME = TavernCodec.name
