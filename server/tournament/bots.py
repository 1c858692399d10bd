"""A bot as a process: started with its command filled in for its game, under its CPU and
memory limits in the sandbox; seated, or replaced by a seat that never answers; stopped; and how
it ended and what it wrote on stderr kept with its game's record: the whole game's last part
with the seat, and what it wrote while each of its turns was asked with that turn.

Tournaments, ``tavern play`` and ``tavern validate`` run their bots so, alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from server.bot_stderr import StderrPipe
from server.games.base import Outcome
from server.jail import jailed, relay
from server.league import GAME_OVER
from server.limited import launcher
from server.match import Match, MatchEnd
from server.match_options import SeatRequest
from server.records import Records
from server.sandbox import POLL_S, BotGroup, Sandbox
from server.seat_channel import SeatMessage
from server.tournament.spec import Entrant, Limits, placeholder_values

STDERR_EOF_WAIT_S = 1.0  # after its bot is killed, how long its stderr may take to close
QUOTED_LINES = 40  # at most this many of a bot's last stderr lines are shown to a person
QUOTED_CHARS = 4000  # ... and at most this many characters of them
QUOTED_LINE_CHARS = 500  # a longer line (minified code, a dump) is cut
LEFT_GRACE_S = 1.0  # how long a bot that left its game may take to exit on its own


class AbsentSeat:
    """Stands in for a bot that never joined: it never answers, so it loses on time."""

    def send(self, message: SeatMessage) -> None:
        """Nobody is listening."""

    def close(self) -> None:
        """Nothing to close."""


async def seat_bot(match: Match, port: int, bot: BotProcess, sandbox: Sandbox) -> None:
    """Start a seat's bot (its command filled in for this game, bots on ``port``) and wait for
    it to join; seat an absent player if it does not within its start-up time."""
    seat = bot.seat
    seat_name = match.codec.seat_names[seat]
    match.outputs[seat] = bot  # its stderr, turn by turn
    values = {
        **placeholder_values(bot.entrant, match.codec.name),
        "port": str(port),
        "simulation": match.id,
        "side": seat_name,
        "seed": str(match.seed),
    }
    await bot.start(values, sandbox)
    joined = asyncio.create_task(match.wait_seated(seat))
    exited = asyncio.create_task(bot.wait())
    try:
        await asyncio.wait(
            {joined, exited},
            timeout=bot.limits.startup_ms / 1000,
            return_when=asyncio.FIRST_COMPLETED,
        )
    finally:
        joined.cancel()
        exited.cancel()
    if match.seats[seat] is None:
        await bot.stop()
    if match.seats[seat] is None:
        bot.joined = False
        nick = f"{bot.entrant.name} (did not join)"
        match.seat(AbsentSeat(), SeatRequest({"nick": nick, "side": seat_name}))


async def finish_bot(bot: BotProcess, records: Records | None) -> None:
    """Stop a bot whose game is over (or stopped) and, given the records its game's seats are
    in, keep its stderr and how it ended there. One that left its game may end on its own first.
    """
    interrupted = bot.outcome is None
    await bot.stop(LEFT_GRACE_S if bot.left() else 0.0)
    if records is not None:
        records.seat_stderr(bot.match_id, bot.seat, bot.stderr_tail())
        records.seat_exit(bot.match_id, bot.seat, bot.exit_text(interrupted))


def process_ending(returncode: int, group: BotGroup | None, limits: Limits) -> str | None:
    """How a bot's process ended, if not by its runner's kill (SIGKILL)."""
    if group is not None and group.out_of_memory():
        return f"killed: memory limit ({limits.memory_mb} MB)"
    if returncode == -signal.SIGXCPU:  # RLIMIT_CPU, the second line
        return f"killed: CPU limit ({limits.cpu_seconds} s)"
    if returncode == -signal.SIGKILL:
        return None
    if returncode < 0:
        return f"killed by signal {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


class BotProcess:
    """One bot's process, in its own session and cgroups, under its limits.

    Its stderr (``server.bot_stderr``: the whole game's tail, and each turn's beginning) goes,
    as the match's ``SeatOutput``, with each of its turns.

    Its exit is told as ``Records.seat_exit`` keeps it: a bot that played its game to the end
    has an exit that ends with ``GAME_OVER``; any other (it died, was killed by a limit, left
    or never joined) is a crash for the league tables.
    """

    def __init__(self, entrant: Entrant, match_id: str, seat: int, limits: Limits) -> None:
        self.entrant = entrant
        self.match_id = match_id
        self.outcome: Outcome | None = None  # how its game ended, once it has
        self.seat = seat
        self.limits = limits
        self.process: asyncio.subprocess.Process | None = None
        self.group: BotGroup | None = None
        self.joined = True
        self.stderr = StderrPipe()
        self.launch_failed: str | None = None  # why the arena could not start it, if it could not
        self._turn_cpu: float | None = None  # its group's CPU seconds when its turn was sent
        self._turn_cpu_ms: int | None = None  # the CPU its last closed turn cost
        self._watcher: asyncio.Task[None] | None = None  # also sets _exited
        self._exited = asyncio.Event()
        self._killed_for: str | None = None  # the limit the bot went over
        self._ended: str | None = None  # how it ended by itself; None if it was stopped
        self._stopping: asyncio.Task[None] | None = None
        self._relay: asyncio.Task[None] | None = None  # an isolated bot's, to the arena

    async def start(self, values: dict[str, str], sandbox: Sandbox) -> None:
        command = [part.format(**values) for part in self.entrant.command]
        environment = {
            **os.environ,
            **{f"TAVERN_{key.upper()}": value for key, value in values.items()},
        }
        self.group = sandbox.group(f"{self.match_id}-{self.seat}", self.limits.memory_mb)
        isolated = self.entrant.isolated
        if isolated:  # its game's values only: nothing else of the runner's environment
            game_values = {f"TAVERN_{key.upper()}": value for key, value in values.items()}
            command = jailed(command, self.entrant.cwd, game_values)
        piped = asyncio.subprocess.PIPE if isolated else asyncio.subprocess.DEVNULL
        try:
            self.process = await asyncio.create_subprocess_exec(
                *launcher(
                    self.limits.cpu_seconds,
                    self.limits.memory_mb,
                    [str(procs) for procs in self.group.procs],
                    command,
                ),
                cwd=self.entrant.cwd,
                env=environment,
                stdin=piped,
                stdout=piped,
                stderr=self.stderr.opened(),
                start_new_session=True,
            )
        except OSError as error:  # its launcher (ours) did not start: the arena's fault
            self.stderr.failed(f"cannot start {command}: {error}\n")
            self._ended = f"could not start: {error.strerror}"
            self.launch_failed = self._ended
            return
        self.stderr.started()
        self._watcher = asyncio.create_task(self._watch(self.process, self.group))
        if isolated:  # it speaks over its stdin and stdout: relayed to the arena
            self._relay = asyncio.create_task(relay(self.process, int(values["port"])))

    def turn_opened(self) -> None:
        """Its seat was sent its turn: what it writes from now on is that turn's (what it wrote
        before is only in the whole game's tail)."""
        self.stderr.turn_opened()
        self._turn_cpu = None if self.group is None else self.group.cpu_seconds()

    def turn_closed(self) -> str | None:
        """Its seat's turn is played: what it wrote since the turn was sent, bounded."""
        text = self.stderr.turn_closed()
        started, self._turn_cpu = self._turn_cpu, None
        used = None if self.group is None else self.group.cpu_seconds()
        self._turn_cpu_ms = None
        if started is not None and used is not None:
            self._turn_cpu_ms = round(1000 * (used - started))
        return text

    @property
    def counts_cpu(self) -> bool:
        """An isolated bot (a hosted one) is charged its CPU time, where its group counts it."""
        return self.entrant.isolated and self._turn_cpu is not None

    def turn_cpu_ms(self) -> int | None:
        started = self._turn_cpu
        if started is None or self.group is None:  # no turn open: the last one's
            return self._turn_cpu_ms
        used = self.group.cpu_seconds()
        return None if used is None else round(1000 * (used - started))

    async def _watch(self, process: asyncio.subprocess.Process, group: BotGroup) -> None:
        """Kill the whole bot once its processes together pass the CPU or memory limit, or once
        its own process has exited: what it left running (holding its connection, maybe) goes
        with it.

        It watches the exit too (``wait``): the bot is over once its own process has exited,
        whatever a process it started does with its stderr (it may hold it open as long as it
        lives).
        """
        try:
            while process.returncode is None:
                await asyncio.sleep(POLL_S)
                used = group.cpu_seconds()
                if used is not None and used > self.limits.cpu_seconds and not self._killed_for:
                    self._kill(f"killed: CPU limit ({self.limits.cpu_seconds} s)")
                elif group.out_of_memory() and not self._killed_for:
                    self._kill(f"killed: memory limit ({self.limits.memory_mb} MB)")
            self._kill()
        finally:
            self._exited.set()

    def _kill(self, reason: str | None = None) -> None:
        if reason is not None and self._killed_for is None:
            self._killed_for = reason
        if self.group is not None:
            self.group.kill()
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)

    async def wait(self) -> None:
        """Until the bot's own process has exited (at once if it never started)."""
        if self.process is not None:
            await self._exited.wait()

    async def stop(self, grace_s: float = 0.0) -> None:
        """Kill every process of the bot, keep how it ended, read the rest of its stderr.

        With ``grace_s``, the bot's process may first end on its own: one that left its game
        is usually on its way out, writing what went wrong on stderr. The stop is done once,
        to its end, even when the caller is cancelled (a tournament stopping): then whoever
        calls next waits for the same stop.
        """
        if self._stopping is None:
            self._stopping = asyncio.create_task(self._stop(grace_s))
        await asyncio.shield(self._stopping)

    async def _stop(self, grace_s: float) -> None:
        if self.process is not None and grace_s > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wait(), grace_s)
        if self.process is not None:
            self._kill()
            await self.wait()
            assert self.process.returncode is not None
            self._ended = process_ending(self.process.returncode, self.group, self.limits)
        if self.stderr.is_open:
            # Every writer is dead, unless one escaped a machine without cgroups.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stderr.closed.wait(), STDERR_EOF_WAIT_S)
            self.stderr.close()
        if self.group is not None:
            await self.group.remove()
        if self._relay is not None:
            self._relay.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
                await self._relay

    def exit_text(self, interrupted: bool = False) -> str:
        """How the bot ended, as the game's record keeps it (server.league.crashed reads it)."""
        ended = self._killed_for or self._ended
        if not self.joined:
            if ended is None:
                return f"did not join within {self.limits.startup_ms} ms"
            return f"did not join ({ended})"
        if self._killed_for is not None:
            return self._killed_for
        if interrupted:  # whatever it did once the arena told it that it was stopping
            return "stopped when the tournament was interrupted"
        if self.left():
            return ended or "left the game before its end"
        return f"{ended} {GAME_OVER}" if ended else f"stopped {GAME_OVER}"

    def left(self) -> bool:
        """Did the bot lose its game by leaving it (its connection closed)?"""
        outcome = self.outcome
        return (
            outcome is not None
            and outcome.reason == MatchEnd.PLAYER_DISCONNECTED
            and outcome.winner != self.seat
        )

    def stderr_tail(self) -> str:
        return self.stderr.tail()


def quoted_stderr(stderr: str) -> str:
    """What a bot wrote on stderr, for a person reading how it ended: its last lines, each
    quoted with ``  | ``, within ``QUOTED_LINES`` and ``QUOTED_CHARS``.

    When the cut falls inside a stack trace, the line that began it is kept above a note of
    what was left out: Node.js writes the error's message there, above its stack frames.
    """
    lines = [
        line if len(line) <= QUOTED_LINE_CHARS else line[:QUOTED_LINE_CHARS] + " ..."
        for line in stderr.rstrip().lstrip("\n").splitlines()
    ]
    first = len(lines)  # the first line shown
    size = 0
    while first > 0 and len(lines) - first < QUOTED_LINES:
        size += len(lines[first - 1]) + 1
        if size > QUOTED_CHARS:
            break
        first -= 1
    shown = lines[first:]
    if first > 0:
        began = None
        if shown[0][:1].isspace():  # the cut is inside a stack trace
            began = next(
                (i for i in reversed(range(first)) if lines[i] and not lines[i][0].isspace()),
                None,
            )
        if began is not None:
            shown = [lines[began], f"... ({first - 1} lines not shown)", *shown]
        else:
            shown = [f"... ({first} earlier lines not shown)", *shown]
    return "".join(f"  | {line}".rstrip() + "\n" for line in shown)
