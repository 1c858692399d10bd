"""The ladder in the records: ratings per game and season, moved by every rated game once.

A rated game is rated in the transaction that records its end, by the node that played it:
both ratings, the two history rows (keyed by the game's id and seat, so that a game rated
again, say one restored and finished twice, is found rated and left alone), together or not
at all. A game whose node was killed never ends in the records, so it is never rated. Seasons:
the latest row of ``ladder_seasons`` is the current one; a new season starts every bot afresh
and keeps the old table.
"""

from __future__ import annotations

import time

from server.games.base import JsonObject
from server.league import NEW_RATING, Rating, rate_game
from server.match_events import VOIDED_REASON
from server.records.backends import Connection

RESULTS = ("loss", "draw", "win")
VOIDED_KEPT = 20  # a bot's last voided games its page lists


def next_change(db: Connection) -> int:
    """The number of a change of a bot or of a rating (``server.records.identities``), taken in
    the transaction that makes the change: that transaction holds the counter's row until it
    ends, so the numbers commit in order and a reader that has seen one has all before it."""
    db.execute("UPDATE roster_changes SET number = number + 1")
    return int(db.execute("SELECT number FROM roster_changes").fetchone()[0])


def current_season(db: Connection) -> str:
    row = db.execute(
        "SELECT name FROM ladder_seasons ORDER BY started_at DESC, name DESC LIMIT 1"
    ).fetchone()
    return str(row[0])


def start_season(db: Connection, name: str) -> bool:
    """False if a season of that name was played already."""
    started = db.execute(
        "INSERT INTO ladder_seasons (name, started_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (name, time.time()),
    )
    return started.rowcount == 1


def set_banned(db: Connection, name: str, banned: bool) -> str | None:
    """Ban or unban a registered bot; its name as registered, or None if there is none. In a
    transaction."""
    row = db.execute("SELECT name FROM bots WHERE folded = ?", (name.casefold(),)).fetchone()
    if row is None:
        return None
    db.execute(
        "UPDATE bots SET banned = ?, changed_at = ?, change_number = ? WHERE name = ?",
        (int(banned), time.time(), next_change(db), row["name"]),
    )
    return str(row["name"])


def rate(
    db: Connection, game_id: str, game: str, bots: tuple[str, str], winner: int | None
) -> bool:
    """Move both bots' ratings by a finished game, unless it was rated already (False)."""
    if db.execute("SELECT 1 FROM rating_history WHERE game_id = ? LIMIT 1", (game_id,)).fetchone():
        return False
    # Taken first: a rating moved by another node meanwhile is read as it ends up.
    change = next_change(db)
    season = current_season(db)
    before = tuple(_rating(db, game, season, bot) for bot in bots)
    after = rate_game((before[0], before[1]), winner)
    now = time.time()
    for seat, bot in enumerate(bots):
        outcome = 1 if winner is None else 2 if winner == seat else 0
        db.execute(
            "INSERT INTO ratings (game, season, bot, mu, sigma, games, wins, losses, draws, "
            "last_game_id, last_played_at, change_number) "
            "VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (game, season, bot) DO UPDATE SET mu = excluded.mu, "
            "sigma = excluded.sigma, games = ratings.games + 1, "
            "wins = ratings.wins + excluded.wins, losses = ratings.losses + excluded.losses, "
            "draws = ratings.draws + excluded.draws, last_game_id = excluded.last_game_id, "
            "last_played_at = excluded.last_played_at, change_number = excluded.change_number",
            (
                game,
                season,
                bot,
                after[seat].mu,
                after[seat].sigma,
                int(outcome == 2),
                int(outcome == 0),
                int(outcome == 1),
                game_id,
                now,
                change,
            ),
        )
        db.execute(
            "INSERT INTO rating_history (game_id, seat, bot, opponent, game, season, result, "
            "mu_before, sigma_before, mu, sigma, rated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                game_id,
                seat,
                bot,
                bots[1 - seat],
                game,
                season,
                RESULTS[outcome],
                before[seat].mu,
                before[seat].sigma,
                after[seat].mu,
                after[seat].sigma,
                now,
            ),
        )
    return True


def _rating(db: Connection, game: str, season: str, bot: str) -> Rating:
    row = db.execute(
        "SELECT mu, sigma FROM ratings WHERE game = ? AND season = ? AND bot = ?",
        (game, season, bot),
    ).fetchone()
    return Rating(bot, *NEW_RATING) if row is None else Rating(bot, row["mu"], row["sigma"])


def seasons(db: Connection) -> list[str]:
    """Every season, the current one first."""
    rows = db.execute("SELECT name FROM ladder_seasons ORDER BY started_at DESC, name DESC")
    return [str(row[0]) for row in rows]


def ladder_table(db: Connection, game: str, season: str) -> list[JsonObject]:
    """A game's table in a season, the highest ordinal (mu - 3 sigma) first."""
    rows = db.execute(
        "SELECT bot, mu, sigma, games, wins, losses, draws, last_game_id, last_played_at "
        "FROM ratings WHERE game = ? AND season = ?",
        (game, season),
    )
    table = [
        {
            "bot": row["bot"],
            "mu": row["mu"],
            "sigma": row["sigma"],
            "ordinal": Rating(row["bot"], row["mu"], row["sigma"]).ordinal,
            "games": row["games"],
            "wins": row["wins"],
            "losses": row["losses"],
            "draws": row["draws"],
            "lastGame": row["last_game_id"],
            "lastPlayedAt": row["last_played_at"],
        }
        for row in rows
    ]
    return sorted(table, key=lambda entry: (-entry["ordinal"], entry["bot"]))


def bot_record(db: Connection, name: str, history_kept: int = 200) -> JsonObject | None:
    """A registered bot's page: its ratings, its rated games (newest first), head to head."""
    row = db.execute(
        "SELECT name, banned, created_at FROM bots WHERE folded = ?", (name.casefold(),)
    ).fetchone()
    if row is None:
        return None
    bot = row["name"]
    ratings = [
        {
            "game": rating["game"],
            "season": rating["season"],
            "mu": rating["mu"],
            "sigma": rating["sigma"],
            "games": rating["games"],
            "wins": rating["wins"],
            "losses": rating["losses"],
            "draws": rating["draws"],
        }
        for rating in db.execute(
            "SELECT * FROM ratings WHERE bot = ? ORDER BY last_played_at DESC", (bot,)
        )
    ]
    # Each rated game's two rows are written together (``rate``): the opponent's row gives its
    # rating as the game began. Should it be missing, its rating now in that season is given,
    # and said to be so (``opponentMuAt``).
    history = [
        {
            "gameId": game["game_id"],
            "game": game["game"],
            "season": game["season"],
            "opponent": game["opponent"],
            "opponentMu": game["opponent_mu"] if game["then_mu"] is None else game["then_mu"],
            "opponentMuAt": "start"
            if game["then_mu"] is not None
            else ("now" if game["opponent_mu"] is not None else None),
            "result": game["result"],
            "mu": game["mu"],
            "sigma": game["sigma"],
            "ratedAt": game["rated_at"],
        }
        for game in db.execute(
            "SELECT h.game_id, h.game, h.season, h.opponent, h.result, h.mu, h.sigma, "
            "h.rated_at, o.mu_before AS then_mu, r.mu AS opponent_mu "
            "FROM rating_history h "
            "LEFT JOIN rating_history o ON o.game_id = h.game_id AND o.seat <> h.seat "
            "LEFT JOIN ratings r ON r.game = h.game AND r.season = h.season AND r.bot = h.opponent "
            "WHERE h.bot = ? ORDER BY h.rated_at DESC, h.game_id LIMIT ?",
            (bot, history_kept),
        )
    ]
    meetings = [
        {
            "opponent": meeting["opponent"],
            "game": meeting["game"],
            "wins": meeting["wins"],
            "losses": meeting["losses"],
            "draws": meeting["draws"],
        }
        for meeting in db.execute(
            "SELECT opponent, game, SUM(CASE WHEN result = 'win' THEN 1 ELSE 0 END) AS wins, "
            "SUM(CASE WHEN result = 'loss' THEN 1 ELSE 0 END) AS losses, "
            "SUM(CASE WHEN result = 'draw' THEN 1 ELSE 0 END) AS draws "
            "FROM rating_history WHERE bot = ? GROUP BY opponent, game ORDER BY opponent, game",
            (bot,),
        )
    ]
    return {
        "bot": bot,
        "banned": bool(row["banned"]),
        "registeredAt": row["created_at"],
        "ratings": ratings,
        "history": history,
        "headToHead": meetings,
        "voided": _voided(db, bot),
    }


def _voided(db: Connection, bot: str) -> list[JsonObject]:
    """The bot's last games the arena broke (``Game voided``): rated for nobody, its page says
    that they were."""
    return [
        {
            "gameId": game["id"],
            "game": game["game"],
            "opponent": game["opponent"],
            "finishedAt": game["finished_at"],
        }
        for game in db.execute(
            "SELECT g.id, g.game, g.finished_at, (SELECT o.nick FROM seats o "
            "WHERE o.game_id = g.id AND o.seat <> s.seat ORDER BY o.seat LIMIT 1) AS opponent "
            "FROM games g JOIN seats s ON s.game_id = g.id WHERE s.bot = ? AND g.reason = ? "
            "ORDER BY g.finished_at DESC LIMIT ?",
            (bot, VOIDED_REASON, VOIDED_KEPT),
        )
    ]
