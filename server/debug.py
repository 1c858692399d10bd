"""What a bot says about each of its turns, kept with the turn: its debug text (a move's
``"debug"`` field) and, for a bot the arena runs as a process, what it wrote on stderr while
the turn was being asked of it.

Both are bounded (``MAX_DEBUG_CHARS``, ``MAX_STDERR_BYTES``; longer text is cut, with a marker
saying how much was cut), stored in the records with the turn's action, shown by ``tavern
replay`` and the replay page, and never sent to the opponent nor to spectators while the game
is played (docs/protocol.md).
"""

from __future__ import annotations

from typing import Any

MAX_DEBUG_CHARS = 2048
MAX_STDERR_BYTES = 2048  # of a turn's stderr; the whole game's tail is kept apart
DEBUG_KEY = "debug"
STDERR_KEY = "stderr"
CPU_KEY = "cpuMs"  # the CPU time the bot's processes used for the turn (an isolated bot's)
# How the reply's time split, in ms: ``[reply, round trip, the arena's lateness, think]``
# (``server.match_views.ReplyTiming``).
TIMING_KEY = "timing"
MOST_CPU_MS = 86_400_000  # a day: a CPU time a worker reports beyond it is no measure


def debug_text(message: dict[str, Any]) -> str | None:
    """A move's debug text, bounded; ``None`` if it has none (or a value that is not text)."""
    text = message.get(DEBUG_KEY)
    if not isinstance(text, str) or not text:
        return None
    if len(text) <= MAX_DEBUG_CHARS:
        return text
    return f"{text[:MAX_DEBUG_CHARS]}… [cut: {len(text) - MAX_DEBUG_CHARS} more characters]"


def reported_cpu_ms(message: dict[str, Any]) -> int | None:
    """The CPU time a hosted bot's worker reports beside its move (``cpuMs``, in the reference
    machine's ms: ``server.hosted_worker``), or ``None`` if it sent none that reads as one.
    Read only from a seat proved with a hosting key: any other bot could claim anything."""
    value = message.get(CPU_KEY)
    return value if type(value) is int and 0 <= value <= MOST_CPU_MS else None


def reported_stderr(message: dict[str, Any]) -> str | None:
    """What a hosted bot wrote on stderr during its turn, as its worker reports it beside its
    move (``stderr``, already bounded there: ``server.bot_stderr``), bounded again here."""
    text = message.get(STDERR_KEY)
    if not isinstance(text, str) or not text:
        return None
    most = MAX_STDERR_BYTES + 64  # room for the worker's marker of what it cut
    return text if len(text) <= most else f"{text[:most]}… [cut: {len(text) - most} more]"


def stderr_text(kept: bytes, cut: int) -> str | None:
    """A turn's stderr as kept: its first bytes (at most ``MAX_STDERR_BYTES``), then a marker
    if ``cut`` more were written; ``None`` if the bot wrote nothing."""
    if not kept and not cut:
        return None
    text = kept.decode(errors="replace")
    return f"{text}… [cut: {cut} more bytes]" if cut else text


def without_debug(action: dict[str, Any]) -> dict[str, Any]:
    """A recorded action as the bot's move was: its debug text, its stderr, its CPU time and
    its reply's timing taken out."""
    if (
        DEBUG_KEY not in action
        and STDERR_KEY not in action
        and CPU_KEY not in action
        and TIMING_KEY not in action
    ):
        return action
    return {key: value for key, value in action.items() if key not in KEPT_BESIDE}


KEPT_BESIDE = (DEBUG_KEY, STDERR_KEY, CPU_KEY, TIMING_KEY)  # what the records keep beside a move
