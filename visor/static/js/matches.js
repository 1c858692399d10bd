// /matches: every game of a tournament (or every recorded game), newest first, a page at a
// time; a bot chosen in the filter has its games listed and its name marked, as the
// challenge's Matches screen highlighted clients. Click a game to replay it.
//
// The address keeps the choice: ?tournament=ID (default: the newest) or ?all=1, &bot=NAME,
// &page=N, &perPage=N.

import { byId, el, setText, show } from "./dom.js";
import { formatScore, gameTitle } from "./games.js";
import {
  chosenTournament,
  failure,
  fillTournaments,
  formatTime,
  getJson,
  outcomeFor,
  pageUrl,
  playersList,
  resultText,
  selectTournament,
} from "./records.js";

const DEFAULT_PER_PAGE = 50;
const MAX_PER_PAGE = 200;

const ui = {
  filters: byId("filters"),
  tournament: byId("tournament"),
  bot: byId("bot"),
  summary: byId("summary"),
  error: byId("error"),
  empty: byId("empty"),
  table: byId("matches"),
  body: byId("matches-body"),
  pager: byId("pager"),
  newer: byId("newer"),
  older: byId("older"),
  pageInfo: byId("page-info"),
};

const params = new URLSearchParams(location.search);
const matches = {
  tournaments: [],
  tournament: null, // the id shown, "" for every recorded game
  bot: params.get("bot") || "",
  page: positive(params.get("page"), 1),
  perPage: Math.min(MAX_PER_PAGE, positive(params.get("perPage"), DEFAULT_PER_PAGE)),
  total: 0,
  request: 0,
};

ui.filters.addEventListener("submit", (event) => event.preventDefault());
ui.tournament.addEventListener("change", () => {
  matches.bot = "";
  matches.page = 1;
  chooseTournament(ui.tournament.value);
});
ui.bot.addEventListener("change", () => {
  matches.bot = ui.bot.value;
  matches.page = 1;
  loadGames();
});
ui.newer.addEventListener("click", () => turnPage(-1));
ui.older.addEventListener("click", () => turnPage(1));
ui.body.addEventListener("click", (event) => {
  // The whole row opens the replay; its links and buttons do their own thing.
  if (!(event.target instanceof Element) || event.target.closest("a, button")) return;
  const row = event.target.closest("tr[data-game-id]");
  if (row) location.assign(`/replay/${encodeURIComponent(row.dataset.gameId)}`);
});
start();

function positive(text, fallback) {
  const value = Number(text);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

async function start() {
  const answer = await getJson("/api/tournaments");
  if (!answer.ok || !Array.isArray(answer.body)) {
    fail(failure(answer, "the tournaments"));
    return;
  }
  matches.tournaments = answer.body;
  fillTournaments(ui.tournament, matches.tournaments, "All recorded games");
  const chosen = chosenTournament(params);
  await chooseTournament(chosen !== null ? chosen : matches.tournaments.length ? matches.tournaments[0].id : "");
}

async function chooseTournament(id) {
  matches.tournament = id;
  selectTournament(ui.tournament, id);
  await fillBots();
  await loadGames();
}

/** The bot filter: the tournament's entrants, and every bot with a finished game. */
async function fillBots() {
  const id = matches.tournament;
  const names = [];
  const tournament = matches.tournaments.find((t) => t.id === id);
  const entrants = tournament && tournament.spec && Array.isArray(tournament.spec.bots) ? tournament.spec.bots : [];
  for (const bot of entrants) if (bot && typeof bot.name === "string") names.push(bot.name);
  const league = await getJson(id ? `/api/league?tournament=${encodeURIComponent(id)}` : "/api/league");
  if (id !== matches.tournament) return;
  if (league.ok && league.body) {
    for (const rows of Object.values(league.body.tables || {})) for (const row of rows) names.push(row.bot);
    for (const rating of league.body.ratings || []) names.push(rating.bot);
  }
  if (matches.bot) names.push(matches.bot);
  const unique = [...new Set(names)];
  if (!entrants.length) unique.sort((a, b) => a.localeCompare(b));
  ui.bot.replaceChildren(
    el("option", { text: "Every bot", attrs: { value: "" } }),
    ...unique.map((name) => el("option", { text: name, attrs: { value: name } })),
  );
  ui.bot.value = matches.bot;
}

function turnPage(delta) {
  matches.page = Math.max(1, matches.page + delta);
  loadGames();
}

async function loadGames() {
  const request = ++matches.request;
  const { tournament, bot, page, perPage } = matches;
  history.replaceState(null, "", pageUrl("/matches", tournament, { bot, page: page > 1 ? page : null, perPage: perPage !== DEFAULT_PER_PAGE ? perPage : null }));
  show(ui.error, false);
  setText(ui.summary, "Loading…");
  const query = new URLSearchParams({ page: String(page), perPage: String(perPage) });
  if (tournament) query.set("tournament", tournament);
  if (bot) query.set("player", bot);
  const answer = await getJson(`/api/games?${query}`);
  if (request !== matches.request) return;
  if (!answer.ok || !answer.body || !Array.isArray(answer.body.games)) {
    render([], 0);
    fail(failure(answer, "the games"));
    return;
  }
  render(answer.body.games, answer.body.total);
}

function fail(text) {
  setText(ui.summary, "");
  setText(ui.error, text);
  show(ui.error, true);
}

function render(games, total) {
  matches.total = total;
  const pages = Math.max(1, Math.ceil(total / matches.perPage));
  show(ui.table, games.length > 0);
  show(ui.empty, games.length === 0);
  ui.body.replaceChildren(...games.map(row));
  const tournament = matches.tournaments.find((t) => t.id === matches.tournament);
  const scope = tournament ? tournament.name : matches.tournament ? matches.tournament : "every recorded game";
  const first = (matches.page - 1) * matches.perPage + 1;
  const shown = games.length ? ` · ${first}–${first + games.length - 1} shown` : "";
  const whose = matches.bot ? ` played by ${matches.bot}` : "";
  setText(ui.summary, `${total} ${total === 1 ? "game" : "games"}${whose} · ${scope}${shown}`);
  show(ui.pager, pages > 1);
  setText(ui.pageInfo, `Page ${matches.page} of ${pages}`);
  ui.newer.disabled = matches.page <= 1;
  ui.older.disabled = matches.page >= pages;
}

function row(summary) {
  const href = `/replay/${encodeURIComponent(summary.id)}`;
  const outcome = matches.bot ? outcomeFor(summary, matches.bot) : null;
  const score = summary.result ? formatScore(summary.game, summary.result.score) : "";
  const result = [el("span", { className: "result-text", text: resultText(summary) })];
  if (outcome && outcome !== "–") {
    result.push(el("span", { className: `outcome outcome-${outcome}`, text: outcome, attrs: { title: `${matches.bot}: ${outcome}` } }));
  }
  return el(
    "tr",
    {
      className: `match-row status-row-${summary.status}${outcome ? ` bot-${outcome}` : ""}`,
      dataset: { gameId: summary.id, status: summary.status },
      attrs: { title: summary.pairing || "" },
    },
    el(
      "td",
      { dataset: { col: "game", label: "Game" } },
      el("a", { className: "game-link", attrs: { href } }, el("code", { text: summary.id })),
      el("span", { className: "cell-note", text: [matches.tournament ? "" : gameTitle(summary.game), formatTime(summary.startedAt)].filter(Boolean).join(" · ") }),
    ),
    el("td", { dataset: { col: "players", label: "Pairing" } }, playersList(summary.game, summary.players, matches.bot)),
    el("td", { dataset: { col: "result", label: "Result" } }, ...result),
    el("td", { className: "reason", text: summary.result ? summary.result.reason : summary.status, dataset: { col: "reason", label: "Reason" } }),
    el("td", { className: "num", text: score || "–", dataset: { col: "score", label: "Score" } }),
    el("td", { className: "num", text: summary.turnCount, dataset: { col: "turns", label: "Turns" } }),
    el("td", { className: "row-action" }, el("a", { className: "button button-small", text: "Replay", attrs: { href } })),
  );
}
