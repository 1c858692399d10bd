"""What an attack of ``bench/hostile.py`` is: its name, what it does, and how its arena is set
up; the attacks themselves are in ``bench/hostile.py`` (issue 20's) and
``bench/balanced_attacks.py`` (issue 30's, behind the balancer)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.hostile import Run

Figures = dict[str, Any]
Act = Callable[["Run"], Awaitable[Figures]]


@dataclass(frozen=True)
class Attack:
    name: str
    what: str  # the finding
    act: Act
    honest: str = "tavern"  # the honest pairs' game
    nodes: int = 1
    redis: bool = False
    postgres: bool = False
    prepare: Act | None = None
    balancer: bool = False  # always behind HAProxy (as with --balancer)
    settings: Mapping[str, object] = field(default_factory=dict)  # in every node's config
