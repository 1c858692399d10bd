// What the league and matches pages share: reading the records API, the tournament chooser,
// players and results of recorded games. Names come from bot authors: text only.

import { el } from "./dom.js";
import { GAMES, gameTitle, seatLabel } from "./games.js";

/** GET a JSON API; never throws: {ok, status, body} (status 0 when the arena is unreachable). */
export async function getJson(url) {
  return fetchJson(url, {});
}

/** A request to a JSON API (``init`` as fetch takes it: a POST's method and body); never
 * throws: {ok, status, body} (status 0 when the arena is unreachable). */
export async function fetchJson(url, init) {
  let response;
  try {
    response = await fetch(url, { ...init, headers: { Accept: "application/json", ...init.headers } });
  } catch {
    return { ok: false, status: 0, body: null };
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  return { ok: response.ok, status: response.status, body };
}

/** Why a request the arena answered with an error (or never answered: status 0) failed. */
export function refusal(status, body) {
  if (status === 0) return "the arena cannot be reached";
  return body && body.error ? body.error : `the arena answered ${status}`;
}

/** The reason an API call failed, as a sentence. */
export function failure(answer, what) {
  if (answer.status === 0) return `The arena cannot be reached: ${what} could not be loaded. Reload to try again.`;
  const why = refusal(answer.status, answer.body);
  const later = answer.status === 503 ? " Try again in a few seconds." : "";
  return `${what[0].toUpperCase()}${what.slice(1)} could not be loaded: ${why}.${later}`;
}

/**
 * The query string's choice of tournament: an id, "" for every game (?all), or null when the
 * page should take the newest.
 */
export function chosenTournament(params) {
  if (params.has("tournament")) return params.get("tournament");
  if (params.has("all")) return "";
  return null;
}

/** Fill a tournament <select>: newest first, then every game (value ""). */
export function fillTournaments(select, tournaments, allLabel) {
  const options = tournaments.map((t) =>
    el("option", { text: `${t.name} · ${gameTitle(t.game)}${t.finishedAt ? "" : " (in progress)"}`, attrs: { value: t.id } }),
  );
  options.push(el("option", { text: allLabel, attrs: { value: "" } }));
  select.replaceChildren(...options);
}

/** Make sure a tournament id that is not in the list still shows as chosen (it will say why). */
export function selectTournament(select, id) {
  if (![...select.options].some((option) => option.value === id)) {
    select.prepend(el("option", { text: `${id} (unknown)`, attrs: { value: id } }));
  }
  select.value = id;
}

/** The query string for a page's state, leaving out what is empty. */
export function pageUrl(path, tournament, extra = {}) {
  const params = new URLSearchParams();
  if (tournament === "") params.set("all", "1");
  else if (tournament) params.set("tournament", tournament);
  for (const [key, value] of Object.entries(extra)) {
    if (value !== null && value !== undefined && value !== "") params.set(key, String(value));
  }
  const query = params.toString();
  return query ? `${path}?${query}` : path;
}

/** A recorded player's name: the tournament bot's, or the nick it joined with. */
export function playerName(player) {
  return player ? player.bot || player.nick : "nobody";
}

/** The players of a game, one line per seat, the highlighted bot marked. */
export function playersList(game, players, highlight) {
  const info = GAMES[game] || { seats: (players || []).map((p) => p.seat) };
  return el(
    "ul",
    { className: "row-players" },
    ...info.seats.map((seat) => {
      const player = (players || []).find((p) => p && p.seat === seat);
      const name = playerName(player);
      const mine = Boolean(highlight) && player && (player.bot === highlight || player.nick === highlight);
      return el(
        "li",
        { className: `seat-${seat}${mine ? " highlighted" : ""}`, dataset: { seat } },
        el("span", { className: "swatch", attrs: { "aria-hidden": "true", title: seatLabel(game, seat) } }),
        el("span", { className: "seat-tag", text: seatLabel(game, seat) }),
        el("span", { className: player ? "nick" : "nick free", text: name }),
        player && player.kind && player.kind !== "bot" ? el("span", { className: "badge", text: player.kind }) : null,
      );
    }),
  );
}

/** Who won a recorded game, in a few words; or where it stands. */
export function resultText(summary) {
  if (summary.status === "playing") return "being played";
  if (!summary.result) return summary.status === "unfinished" ? "unfinished" : "–";
  if (!summary.result.winner) return "draw";
  const winner = (summary.players || []).find((p) => p.seat === summary.result.winner);
  return `${winner ? playerName(winner) : seatLabel(summary.game, summary.result.winner)} won`;
}

/** How a bot did in a game: "won", "lost", "draw", or the game's state. */
export function outcomeFor(summary, bot) {
  if (!summary.result) return summary.status === "playing" ? "playing" : "unfinished";
  if (!summary.result.winner) return "draw";
  const mine = (summary.players || []).find((p) => p.bot === bot || (!p.bot && p.nick === bot));
  if (!mine) return "–";
  return mine.seat === summary.result.winner ? "won" : "lost";
}

/** A time from the records (seconds since the epoch) in the reader's locale. */
export function formatTime(seconds) {
  if (!seconds) return "";
  return new Date(seconds * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}
