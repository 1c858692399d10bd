"""How fast this machine runs bots, beside the machine the arena's clocks are set for (issue 33,
item 4, fishtest's way): a fixed benchmark, pure Python as most bots are (Thud's legal moves
from the opening position, over and over), timed in this process's CPU seconds, its best of a
few runs. A machine that takes twice the reference's time gets clocks twice as long, so that a
move is worth the same on a slow worker and a fast one."""

from __future__ import annotations

import functools
import time

from server.games.thud.movegen import legal_moves
from server.games.thud.pieces import initial_state

ROUNDS = 2000  # the benchmark's work: Thud's opening moves generated this many times
RUNS = 3  # its best is taken: a run the machine interrupted says nothing of its speed
# The benchmark's best CPU time on the reference machine, which the arena's clocks are set for
# (this project's development machine: 2 cores of an Intel Xeon, Python 3.11; docs/hosting.md).
REFERENCE_S = 0.054
SPEED_BOUNDS = (0.25, 4.0)  # a measure outside them is taken for a fault of the measure


def benchmark_s() -> float:
    """The benchmark's best CPU time here, in seconds."""
    position = initial_state()
    best = float("inf")
    for _ in range(RUNS):
        started = time.process_time()
        for _ in range(ROUNDS):
            legal_moves(position)
        best = min(best, time.process_time() - started)
    return best


@functools.cache
def speed() -> float:
    """This machine's speed as the reference's multiple (0.5: half as fast), measured once a
    process, within ``SPEED_BOUNDS``."""
    low, high = SPEED_BOUNDS
    return max(low, min(high, REFERENCE_S / max(benchmark_s(), 1e-9)))
