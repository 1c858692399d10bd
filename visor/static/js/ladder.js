// /ladder: a game's ladder in a season (?game=thud&season=NAME), from /api/ladder: rating
// (openskill mu ± sigma, ranked by mu − 3 sigma), games, wins–draws–losses, whether the bot is
// connected now, its last game (a replay link). Refreshed every few seconds: the table is live.

import { byId, el, setText, show } from "./dom.js";
import { GAME_NAMES, gameOf, gameTitle } from "./games.js";
import { failure, formatTime, getJson } from "./records.js";

const REFRESH_MS = 5000;
const ui = {
  game: byId("game"),
  season: byId("season"),
  summary: byId("summary"),
  error: byId("error"),
  empty: byId("empty"),
  tableCard: byId("table-card"),
  body: byId("ladder-body"),
};
const params = new URLSearchParams(location.search);
ui.game.replaceChildren(...GAME_NAMES.map((name) => el("option", { text: gameTitle(name), attrs: { value: name } })));
ui.game.value = gameOf(params.get("game")) ? params.get("game") : GAME_NAMES[0];
let season = params.get("season");

ui.game.addEventListener("change", () => {
  season = null;
  load();
});
ui.season.addEventListener("change", () => {
  season = ui.season.value;
  load();
});
load();
setInterval(load, REFRESH_MS);

async function load() {
  const query = new URLSearchParams({ game: ui.game.value });
  if (season) query.set("season", season);
  history.replaceState(null, "", `/ladder?${query}`);
  const answer = await getJson(`/api/ladder?${query}`);
  show(ui.error, !answer.ok);
  if (!answer.ok) {
    setText(ui.error, failure(answer, "the ladder"));
    return;
  }
  const ladder = answer.body;
  ui.season.replaceChildren(...ladder.seasons.map((name) => el("option", { text: name, attrs: { value: name } })));
  ui.season.value = ladder.season;
  const bots = ladder.bots;
  setText(ui.summary, `Season ${ladder.season}: ${bots.length} ${bots.length === 1 ? "bot" : "bots"} rated.`);
  show(ui.empty, bots.length === 0);
  show(ui.tableCard, bots.length > 0); // no table under "No rated games"
  ui.body.replaceChildren(
    ...bots.map((bot, index) =>
      el(
        "tr",
        { dataset: { bot: bot.bot } },
        el("td", { className: "num", text: index + 1 }),
        el(
          "td",
          { className: "bot-cell" },
          el("a", { className: "bot-name", text: bot.bot, attrs: { href: `/bots/${encodeURIComponent(bot.bot)}`, title: bot.bot } }),
          bot.online ? el("span", { className: "online-dot", attrs: { role: "img", "aria-label": "online", title: "online" } }) : null,
        ),
        el("td", { className: "num", text: `${bot.mu.toFixed(1)} ± ${bot.sigma.toFixed(1)}` }),
        el("td", { className: "num col-games", text: bot.games }),
        el("td", { className: "num wdl", text: `${bot.wins}–${bot.draws}–${bot.losses}` }),
        el("td", { className: "col-online", text: bot.online ? "online" : "" }),
        el(
          "td",
          { className: "col-last" },
          el("a", { text: formatTime(bot.lastPlayedAt), attrs: { href: `/replay/${encodeURIComponent(bot.lastGame)}` } }),
        ),
      ),
    ),
  );
}
