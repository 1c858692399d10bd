"""The Thud board's geometry, computed once at import so move generation only looks things up.

A *cell* is ``x + 15 * y`` for any (x, y) of the 15x15 grid; the tables below are indexed by cell
and are empty for cells that are not squares, so lookups never need a bounds check.
"""

from __future__ import annotations

Square = tuple[int, int]
"""(x, y): x the column and y the row, 0..14 from the top-left."""

SIZE = 15
THUDSTONE: Square = (7, 7)

DIRECTIONS: tuple[tuple[int, int], ...] = (
    (0, -1),  # N
    (1, -1),  # NE
    (1, 0),  # E
    (1, 1),  # SE
    (0, 1),  # S
    (-1, 1),  # SW
    (-1, 0),  # W
    (-1, -1),  # NW
)
"""The eight directions in the engine's iteration order N, NE, E, SE, S, SW, W, NW."""


def opposite(direction: int) -> int:
    """The index in ``DIRECTIONS`` of the reverse direction."""
    return (direction + 4) % 8


def _on_board(x: int, y: int) -> bool:
    return min(x, SIZE - 1 - x) + min(y, SIZE - 1 - y) >= 5 and (x, y) != THUDSTONE


_IS_SQUARE: tuple[tuple[bool, ...], ...] = tuple(
    tuple(_on_board(x, y) for y in range(SIZE)) for x in range(SIZE)
)


def is_square(x: int, y: int) -> bool:
    """True if (x, y) is one of the 164 squares: inside the octagon and not the Thudstone.

    A table lookup: every turn asks it of the squares a bot sent.
    """
    return 0 <= x < SIZE and 0 <= y < SIZE and _IS_SQUARE[x][y]


def cell_of(square: Square) -> int:
    """The cell index of a square."""
    return square[0] + SIZE * square[1]


CELL_COUNT = SIZE * SIZE

CELL_SQUARE: tuple[Square, ...] = tuple((c % SIZE, c // SIZE) for c in range(CELL_COUNT))
"""The (x, y) of every cell; moves, positions and the squares bots send all use these tuples
instead of building new ones, so comparing two squares mostly finds them the same object."""

SQUARES: tuple[Square, ...] = tuple(
    CELL_SQUARE[x + SIZE * y] for y in range(SIZE) for x in range(SIZE) if is_square(x, y)
)
"""The 164 squares in row-major order (y, then x), like the engine's ``spaces()``."""


def _ray(x: int, y: int, dx: int, dy: int) -> tuple[int, ...]:
    cells = []
    x, y = x + dx, y + dy
    while is_square(x, y):
        cells.append(x + SIZE * y)
        x, y = x + dx, y + dy
    return tuple(cells)


RAYS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(_ray(x, y, dx, dy) for dx, dy in DIRECTIONS) if is_square(x, y) else ((),) * 8
    for x, y in CELL_SQUARE
)
"""``RAYS[cell][direction]``: the squares going outwards, up to the edge or the Thudstone."""

NEIGHBOURS: tuple[tuple[int, ...], ...] = tuple(
    tuple(ray[0] for ray in rays if ray) for rays in RAYS
)
"""The existing neighbours of each cell, in direction order."""

NEAR: tuple[tuple[int, ...], ...] = tuple(
    tuple(
        (x + dx) + SIZE * (y + dy)
        for dy in range(-2, 3)
        for dx in range(-2, 3)
        if (dx, dy) != (0, 0) and is_square(x + dx, y + dy)
    )
    if is_square(x, y)
    else ()
    for x, y in CELL_SQUARE
)
"""The squares at Chebyshev distance 1 or 2 of each square, looking across the Thudstone."""


def _ray_slice(cell: int, ray: tuple[int, ...]) -> slice:
    if not ray:
        return slice(0, 0)
    step = ray[0] - cell
    stop = ray[-1] + step
    return slice(ray[0], stop if stop >= 0 else None, step)


RAY_SLICES: tuple[tuple[slice, ...], ...] = tuple(
    tuple(_ray_slice(cell, ray) for ray in rays) for cell, rays in enumerate(RAYS)
)
"""``cells[RAY_SLICES[cell][direction]]``: what stands along ``RAYS[cell][direction]``, in ray
order, read by one slice of a board indexed by cell instead of a Python loop over the ray."""
