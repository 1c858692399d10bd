"""``tavern bots try NAME GAME``: a hosted bot's newest candidate version against its active one,
in an SPRT match (issue 33, item 5), as ``tavern match`` plays one: pairs of games on one seed,
the sides swapped, until the test decides, each version run isolated (``server.jail``).

If the candidate is stronger (H1 accepted), it becomes the bot's active version, and the bot's
rating in that game moves by the measured Elo difference (within ``ELO_BOUND``) instead of
starting afresh: the bot is rated, not its versions, and its new version is that much stronger
than the rating says.
Otherwise it stays a candidate. Either way the match's result is kept with the version
(``tavern bots versions``, ``/bots/NAME``), and its games are in the records as a match's.

The Elo difference moves the bot's openskill mean by ``MU_PER_ELO`` a point: the two models
agree on how the chance of winning grows near an even game (Elo's logistic curve, 400 points
a factor of ten; openskill's normal one with its default beta of 25/6 a player).
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from server.config import ArenaConfig
from server.games.base import JsonObject
from server.records import Records
from server.records.versions import ACTIVE, CANDIDATE, keep_trial
from server.sprt import Sprt, Verdict
from server.tournament.spec import TournamentError, TournamentSpec, spec_from_mapping
from tavern_cli.match import NAMES, MatchReport, run_match

BETA = 25 / 6  # openskill's default
MU_PER_ELO = (math.log(10) / 1600) * math.sqrt(2 * math.pi) * math.sqrt(2) * BETA
MAX_SEED = 2**32
# The Elo a match can measure at most either way: all wins (or all losses) has no finite
# estimate, and a rating moved without bound would rank a bot above every other at once.
ELO_BOUND = 400.0


def trial_spec(
    bot: str, game: str, candidate: int, active: int, games: int, concurrency: int
) -> TournamentSpec:
    """The match: A, the candidate version; B, the active one."""
    seed = random.randrange(MAX_SEED)
    raw: JsonObject = {
        "name": f"try {bot} {candidate} against {active} {datetime.now(UTC):%Y%m%d-%H%M%S}",
        "game": game,
        "seed": seed,
        "parallel": concurrency,
        "paired_games": games,
        "bots": [
            {"name": NAMES[0], "hosted": f"{bot}#{candidate}"},
            {"name": NAMES[1], "hosted": f"{bot}#{active}"},
        ],
    }
    return spec_from_mapping(raw, Path.cwd())


def trial_of(report: MatchReport) -> JsonObject:
    """The match's result as the version keeps it (its Elo within ``ELO_BOUND``)."""
    elo, error = report.tally.elo()
    elo = max(-ELO_BOUND, min(ELO_BOUND, elo))
    return {
        "games": report.tally.games,
        "wins": report.tally.wins,
        "draws": report.tally.draws,
        "losses": report.tally.losses,
        "elo": round(elo, 1),
        "eloError": round(error, 1) if math.isfinite(error) else None,
        "verdict": None if report.verdict is None else report.verdict.value,
    }


async def try_candidate(
    bot: str,
    game: str,
    sprt: Sprt,
    games: int,
    concurrency: int,
    config: ArenaConfig,
    records: Records,
    out: IO[str],
    number: int | None = None,
) -> tuple[int, JsonObject]:
    """Play the newest candidate (or the candidate ``number``) against the active version; its
    number and the result. Raises ``TournamentError`` if the bot has no such candidate or no
    active version."""
    versions = records.bot_versions(bot)
    candidates = [
        v["number"]
        for v in versions
        if v["state"] == CANDIDATE and (number is None or v["number"] == number)
    ]
    actives = [v["number"] for v in versions if v["state"] == ACTIVE]
    if not candidates or not actives:
        raise TournamentError(f"{bot} has no candidate version to try against an active one")
    candidate, active = candidates[0], actives[0]
    spec = trial_spec(bot, game, candidate, active, games, concurrency)
    out.write(f"tavern: {bot}: version {candidate} against version {active} ({spec.id})\n")
    report = await run_match(spec, sprt, config, records, out)
    trial = trial_of(report)
    won = report.verdict is Verdict.H1
    mu_change = float(trial["elo"]) * MU_PER_ELO if won else 0.0
    keep_trial(records.backend, bot, candidate, trial, won, game, mu_change)
    return candidate, trial
