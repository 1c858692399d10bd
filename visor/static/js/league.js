// /league: a tournament's league tables (one per seat of a game that keeps a table per seat, as
// Thud's dwarf and troll tables, else one per game), as the
// challenge kept them, with each bot's crashes and timed-out turns (a bot that crashed ranks
// below one that played), its openskill rating, and a head-to-head table of every pair that met;
// click a bot to list its games. Games the arena gave up on are listed apart, as its faults.
//
// The address keeps the choice: ?tournament=ID (default: the newest), or ?all=1 for every game
// between named bots; &bot=NAME&table=dwarf opens that bot's games.

import { byId, el, setText, show } from "./dom.js";
import { formatScore, gameTitle, LEAGUE_TABLES, seatLabel } from "./games.js";
import {
  chosenTournament,
  failure,
  fillTournaments,
  formatTime,
  getJson,
  outcomeFor,
  pageUrl,
  playerName,
  selectTournament,
} from "./records.js";

const TABLE_ORDER = LEAGUE_TABLES.map((table) => table.name);
const MAX_GAMES = 200; // the API's page size limit

const ui = {
  tournament: byId("tournament"),
  summary: byId("summary"),
  error: byId("error"),
  empty: byId("empty"),
  tables: byId("tables"),
  notPlayedSection: byId("not-played-section"),
  notPlayed: byId("not-played"),
  ratingsSection: byId("ratings-section"),
  ratingsBody: byId("ratings-body"),
  h2hSection: byId("h2h-section"),
  h2hHead: byId("h2h-head"),
  h2hBody: byId("h2h-body"),
  botGames: byId("bot-games"),
  botTitle: byId("bot-title"),
  botSummary: byId("bot-summary"),
  botList: byId("bot-list"),
  botMatches: byId("bot-matches"),
  botClose: byId("bot-close"),
};

const league = {
  tournaments: [],
  tournament: null, // the id shown, "" for every game
  data: null,
  bot: null, // {bot, table}
  request: 0, // answers to older requests are dropped
};

ui.tournament.addEventListener("change", () => {
  league.bot = null;
  choose(ui.tournament.value);
});
ui.botClose.addEventListener("click", () => selectBot(null));
start();

async function start() {
  const answer = await getJson("/api/tournaments");
  if (!answer.ok || !Array.isArray(answer.body)) {
    fail(failure(answer, "the tournaments"));
    return;
  }
  league.tournaments = answer.body;
  fillTournaments(ui.tournament, league.tournaments, "Every game between named bots");
  const params = new URLSearchParams(location.search);
  const chosen = chosenTournament(params);
  if (params.has("bot")) league.bot = { bot: params.get("bot"), table: params.get("table") || null };
  choose(chosen !== null ? chosen : league.tournaments.length ? league.tournaments[0].id : "");
}

async function choose(id) {
  league.tournament = id;
  selectTournament(ui.tournament, id);
  remember();
  const request = ++league.request;
  show(ui.error, false);
  setText(ui.summary, "Loading…");
  const url = id ? `/api/league?tournament=${encodeURIComponent(id)}` : "/api/league";
  const answer = await getJson(url);
  if (request !== league.request) return;
  if (!answer.ok || !answer.body || !answer.body.tables) {
    league.data = null;
    render();
    fail(answer.status === 404 ? `There is no tournament “${id}” in this arena's records.` : failure(answer, "the league"));
    return;
  }
  league.data = answer.body;
  render();
}

function fail(text) {
  setText(ui.summary, "");
  setText(ui.error, text);
  show(ui.error, true);
}

function remember() {
  const bot = league.bot ? { bot: league.bot.bot, table: league.bot.table } : {};
  history.replaceState(null, "", pageUrl("/league", league.tournament, bot));
}

// --- the tables -----------------------------------------------------------------------------

function render() {
  const { data } = league;
  const tables = data ? orderedTables(data.tables) : [];
  show(ui.empty, Boolean(data) && tables.length === 0);
  ui.tables.replaceChildren(...tables.map(([name, rows]) => tableSection(name, rows)));
  ui.tables.dataset.count = String(tables.length);
  renderStandings(data ? data.standings : null);
  renderNotPlayed(data ? data.notPlayed || [] : []);
  renderRatings(data ? data.ratings : []);
  renderHeadToHead(data ? data.headToHead || [] : []);
  if (!data) {
    show(ui.botGames, false);
    return;
  }
  describe(data);
  const wanted = league.bot;
  const found = wanted && findRow(wanted.bot, wanted.table);
  if (found) selectBot(found.table, found.row, false);
  else selectBot(null);
}

function describe(data) {
  const games = `${data.games} ${data.games === 1 ? "game" : "games"} finished`;
  const t = data.tournament;
  if (!t) {
    setText(ui.summary, `Every game between named bots, from every tournament: ${games}.`);
    return;
  }
  const when = t.finishedAt ? `played ${formatTime(t.createdAt)}` : `started ${formatTime(t.createdAt)}, in progress`;
  ui.summary.replaceChildren(
    el("strong", { text: t.name }),
    ` · ${gameTitle(t.game)} · ${games} · ${when} · `,
    el("a", { text: "every game", attrs: { href: pageUrl("/matches", t.id) } }),
  );
}

function orderedTables(tables) {
  const rank = (name) => (TABLE_ORDER.includes(name) ? TABLE_ORDER.indexOf(name) : TABLE_ORDER.length);
  return Object.entries(tables || {}).sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b));
}

function tableTitle(name) {
  const table = LEAGUE_TABLES.find((t) => t.name === name);
  return table ? table.title : name;
}

function tableSection(name, rows) {
  const headings = [
    ["#", "num"],
    ["Bot", ""],
    ["Played", "num"],
    ["Wins", "num"],
    ["Losses", "num"],
    ["Draws", "num"],
    ["Score", "num score"],
    ["Crashes", "num"],
    ["Timeouts", "num"],
  ];
  const body = rows.map((row, index) =>
    el(
      "tr",
      { className: "league-row", dataset: { bot: row.bot, table: name } },
      el("td", { className: "num rank", text: index + 1 }),
      el(
        "td",
        { className: "bot-cell", dataset: { col: "bot" } },
        el("button", { className: "bot-button", text: row.bot, attrs: { type: "button", title: `${row.bot}'s games` } }),
      ),
      el("td", { className: "num", text: row.played, dataset: { col: "played" } }),
      el("td", { className: "num", text: row.wins, dataset: { col: "wins" } }),
      el("td", { className: "num", text: row.losses, dataset: { col: "losses" } }),
      el("td", { className: "num", text: row.draws, dataset: { col: "draws" } }),
      el("td", { className: `num score${row.score > 0 ? " plus" : row.score < 0 ? " minus" : ""}`, text: row.score, dataset: { col: "score" } }),
      el("td", { className: "num", text: row.crashes, dataset: { col: "crashes" } }),
      el("td", { className: "num", text: row.timeouts, dataset: { col: "timeouts" } }),
    ),
  );
  const table = el(
    "table",
    { className: "data-table league-table", dataset: { table: name } },
    el("thead", {}, el("tr", {}, ...headings.map(([text, className]) => el("th", { className, text, attrs: { scope: "col" } })))),
    el("tbody", {}, ...body),
  );
  table.addEventListener("click", (event) => {
    const button = event.target instanceof Element && event.target.closest(".bot-button");
    if (!button) return;
    const row = rows.find((r) => r.bot === button.closest("tr").dataset.bot);
    if (row) selectBot(name, row);
  });
  return el(
    "section",
    { className: `card league-card table-${name}`, dataset: { table: name }, attrs: { "aria-label": tableTitle(name) } },
    el("h2", { className: `seat-${name}` }, el("span", { className: "swatch", attrs: { "aria-hidden": "true" } }), ` ${tableTitle(name)}`),
    el("div", { className: "table-wrap" }, table),
  );
}

/** A Swiss, knockout or arena event's standings (the format's own order), above the tables. */
function renderStandings(standings) {
  show(byId("standings-section"), Boolean(standings));
  if (!standings) return;
  const head = byId("standings-head");
  const body = byId("standings-body");
  const row = (cells) => el("tr", {}, ...cells.map((text, index) => el("td", { className: index === 1 ? "" : "num", text: String(text) })));
  if (standings.format === "knockout") {
    setText(byId("standings-hint"), standings.winner ? `Won by ${standings.winner}.` : "Under way.");
    head.replaceChildren(el("tr", {}, el("th", { text: "Round" }), el("th", { text: "Through" })));
    body.replaceChildren(...standings.rounds.map((won, index) => el("tr", {}, el("td", { className: "num", text: String(index + 1) }), el("td", { text: won.join(", ") }))));
    return;
  }
  const swiss = standings.format === "swiss";
  setText(byId("standings-hint"), swiss
    ? `A Swiss event of ${standings.rounds} rounds: by points, then Buchholz (the opponents' points), then Sonneborn-Berger.`
    : "An arena: a win 2, a draw 1, double after two wins in a row.");
  const titles = swiss ? ["#", "Bot", "Points", "Buchholz", "S-B"] : ["#", "Bot", "Points", "Games"];
  head.replaceChildren(el("tr", {}, ...titles.map((text) => el("th", { text }))));
  body.replaceChildren(...standings.rows.map((r, index) => row(swiss
    ? [index + 1, r.bot, r.points, r.buchholz, r.sonnebornBerger]
    : [index + 1, r.bot, r.points, r.games])));
}

/** The games the tournament's queue gave up on: the arena's faults, which score no bot. */
function renderNotPlayed(games) {
  show(ui.notPlayedSection, games.length > 0);
  ui.notPlayed.replaceChildren(
    ...games.map((game) =>
      el(
        "li",
        { dataset: { pairing: game.pairing, fault: game.fault } },
        el("strong", { text: `Game ${game.number}` }),
        ` (${game.pairing}): ${game.reason}`,
      ),
    ),
  );
}

function renderRatings(ratings) {
  show(ui.ratingsSection, ratings.length > 0);
  ui.ratingsBody.replaceChildren(
    ...ratings.map((rating, index) =>
      el(
        "tr",
        { dataset: { bot: rating.bot } },
        el("td", { className: "num rank", text: index + 1 }),
        el("td", {}, el("button", { className: "bot-button", text: rating.bot, attrs: { type: "button" } })),
        el("td", { className: "num", text: `${rating.mu.toFixed(2)} ± ${rating.sigma.toFixed(2)}`, dataset: { col: "rating" } }),
        el("td", { className: "num", text: rating.ordinal.toFixed(2), dataset: { col: "ordinal" } }),
      ),
    ),
  );
}

/** A square table: each row's record against each column, from the pairs that met. */
function renderHeadToHead(meetings) {
  show(ui.h2hSection, meetings.length > 0);
  const bots = [...new Set(meetings.flatMap((m) => m.bots))].sort();
  const against = new Map(); // "row\u0000column" -> [wins, draws, losses, games]
  for (const m of meetings) {
    const [a, b] = m.bots;
    against.set(`${a}\u0000${b}`, [m.wins[0], m.draws, m.wins[1], m.games]);
    against.set(`${b}\u0000${a}`, [m.wins[1], m.draws, m.wins[0], m.games]);
  }
  ui.h2hHead.replaceChildren(
    el("th", { attrs: { scope: "col" } }, el("span", { className: "visually-hidden", text: "Bot" })),
    ...bots.map((bot) => el("th", { className: "num h2h-col", text: bot, attrs: { scope: "col" } })),
  );
  ui.h2hBody.replaceChildren(
    ...bots.map((row) =>
      el(
        "tr",
        { dataset: { bot: row } },
        el("th", { className: "h2h-bot", text: row, attrs: { scope: "row" } }),
        ...bots.map((column) => {
          if (row === column) return el("td", { className: "num h2h-self", text: "—", dataset: { against: column } });
          const record = against.get(`${row}\u0000${column}`);
          if (!record) return el("td", { className: "num h2h-none", text: "·", dataset: { against: column } });
          const [wins, draws, losses, games] = record;
          const title = `${row} against ${column}: ${wins} won, ${draws} drawn, ${losses} lost of ${games}`;
          const tone = wins > losses ? " plus" : wins < losses ? " minus" : "";
          return el("td", { className: `num h2h-cell${tone}`, text: `${wins}–${draws}–${losses}`, attrs: { title }, dataset: { against: column } });
        }),
      ),
    ),
  );
}

ui.ratingsBody.addEventListener("click", (event) => {
  const button = event.target instanceof Element && event.target.closest(".bot-button");
  if (!button) return;
  const found = findRow(button.closest("tr").dataset.bot, null);
  if (found) selectBot(found.table, found.row);
});

function findRow(bot, table) {
  const tables = orderedTables(league.data ? league.data.tables : {});
  for (const [name, rows] of tables) {
    if (table && name !== table) continue;
    const row = rows.find((r) => r.bot === bot);
    if (row) return { table: name, row };
  }
  return null;
}

// --- a bot's games --------------------------------------------------------------------------

async function selectBot(table, row, scroll = true) {
  for (const tr of ui.tables.querySelectorAll("tr.selected")) tr.classList.remove("selected");
  if (!table || !row) {
    league.bot = null;
    show(ui.botGames, false);
    remember();
    return;
  }
  league.bot = { bot: row.bot, table };
  remember();
  for (const tr of ui.tables.querySelectorAll("tr.league-row")) {
    if (tr.dataset.bot === row.bot && tr.dataset.table === table) tr.classList.add("selected");
  }
  const seatTable = LEAGUE_TABLES.find((t) => t.name === table && t.seatOf);
  const side = seatTable ? ` as ${seatLabel(seatTable.seatOf, table).toLowerCase()}` : "";
  setText(ui.botTitle, `${row.bot}${side}`);
  ui.botGames.dataset.bot = row.bot;
  ui.botGames.dataset.table = table;
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : word.endsWith("s") ? "es" : "s"}`;
  setText(
    ui.botSummary,
    `${plural(row.played, "game")}: ${plural(row.wins, "win")}, ${plural(row.losses, "loss")}, ${plural(row.draws, "draw")}, score ${row.score}; ${row.crashes} ${row.crashes === 1 ? "crash" : "crashes"}, ${plural(row.timeouts, "timed-out turn")}.`,
  );
  ui.botMatches.href = pageUrl("/matches", league.tournament, { bot: row.bot });
  // The ids first, as links, then what each game was once the summaries arrive.
  ui.botList.replaceChildren(...row.games.map((id) => gameItem(id, null, row.bot)));
  show(ui.botGames, true);
  if (scroll) ui.botGames.scrollIntoView({ block: "nearest", behavior: "smooth" });
  const request = league.request;
  const query = new URLSearchParams({ player: row.bot, perPage: String(MAX_GAMES) });
  if (league.tournament) query.set("tournament", league.tournament);
  const answer = await getJson(`/api/games?${query}`);
  if (request !== league.request || !league.bot || league.bot.bot !== row.bot || league.bot.table !== table) return;
  if (!answer.ok || !answer.body) return;
  const summaries = new Map(answer.body.games.map((summary) => [summary.id, summary]));
  ui.botList.replaceChildren(...row.games.map((id) => gameItem(id, summaries.get(id) || null, row.bot)));
}

function gameItem(id, summary, bot) {
  const link = el("a", { className: "game-link", attrs: { href: `/replay/${encodeURIComponent(id)}` }, dataset: { gameId: id } });
  if (!summary) {
    link.append(el("code", { text: id }));
    return el("li", {}, link);
  }
  const outcome = outcomeFor(summary, bot);
  const mine = summary.players.find((p) => p.bot === bot);
  const rival = summary.players.find((p) => p !== mine);
  const score = summary.result ? formatScore(summary.game, summary.result.score) : "";
  link.append(
    el("span", { className: `outcome outcome-${outcome}`, text: outcome }),
    el("span", { className: "game-vs" }, "vs ", el("strong", { className: "nick", text: playerName(rival) })),
    el("span", { className: "hint", text: [summary.result ? summary.result.reason : summary.status, score, `${summary.turnCount} ${summary.turnCount === 1 ? "turn" : "turns"}`].filter(Boolean).join(" · ") }),
    el("code", { className: "game-id", text: id }),
  );
  return el("li", {}, link);
}
