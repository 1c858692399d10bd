// /bots/NAME: a registered bot's rating over time (an SVG chart drawn here, no library), its
// rated games (each a link to its replay) and its head-to-head, from /api/bots/NAME.

import { byId, el, setText, show } from "./dom.js";
import { failure, getJson } from "./records.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 640;
const HEIGHT = 240;
const PAD = 36;
const COLOURS = { thud: "#c8892b", tavern: "#4f8fc0" };

const name = decodeURIComponent(location.pathname.split("/").pop());
load();

async function load() {
  const answer = await getJson(`/api/bots/${encodeURIComponent(name)}`);
  show(byId("error"), !answer.ok);
  if (!answer.ok) {
    setText(byId("error"), failure(answer, `the bot ${name}`));
    setText(byId("summary"), "");
    return;
  }
  const bot = answer.body;
  document.title = `${bot.bot} · Dwarven Tavern Arena`;
  setText(byId("name"), bot.bot);
  const played = bot.ratings.reduce((sum, rating) => sum + rating.games, 0);
  const state = [bot.online ? "online now" : "offline", bot.banned ? "banned" : null].filter(Boolean);
  setText(byId("summary"), `${played} rated ${played === 1 ? "game" : "games"}; ${state.join(", ")}.`);
  byId("chart").replaceChildren(chart(bot.history));
  byId("games-body").replaceChildren(
    ...bot.history.map((game) =>
      el(
        "tr",
        {},
        el("td", { text: game.game }),
        el("td", {}, el("a", { text: game.opponent, attrs: { href: `/bots/${encodeURIComponent(game.opponent)}` } })),
        el("td", { text: game.result }),
        el("td", { className: "num", text: game.mu.toFixed(1) }),
        el("td", {}, el("a", { text: "replay", attrs: { href: `/replay/${encodeURIComponent(game.gameId)}` } })),
      ),
    ),
  );
  byId("h2h-body").replaceChildren(
    ...bot.headToHead.map((meeting) =>
      el(
        "tr",
        {},
        el("td", { text: meeting.opponent }),
        el("td", { text: meeting.game }),
        el("td", { className: "num", text: `${meeting.wins}–${meeting.draws}–${meeting.losses}` }),
      ),
    ),
  );
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  return node;
}

/** One line per game of mu after each rated game, oldest to newest, on a shared scale. */
function chart(history) {
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: "img", class: "rating-svg" });
  const games = [...history].reverse();
  const title = svg("title");
  title.textContent = `Rating over ${games.length} rated games`;
  root.append(title);
  if (games.length === 0) return root;
  const mus = games.map((game) => game.mu);
  const low = Math.floor(Math.min(...mus, 25) - 1);
  const high = Math.ceil(Math.max(...mus, 25) + 1);
  const x = (index) => PAD + (games.length === 1 ? 0 : (index * (WIDTH - 2 * PAD)) / (games.length - 1));
  const y = (mu) => HEIGHT - PAD - ((mu - low) * (HEIGHT - 2 * PAD)) / (high - low);
  root.append(svg("line", { x1: PAD, y1: y(25), x2: WIDTH - PAD, y2: y(25), stroke: "#888", "stroke-dasharray": "4 4" }));
  for (const [mu, anchor] of [[high, "start"], [low, "start"], [25, "start"]]) {
    const label = svg("text", { x: 2, y: y(mu) + 4, fill: "currentColor", "font-size": 12, "text-anchor": anchor });
    label.textContent = String(mu);
    root.append(label);
  }
  for (const game of new Set(games.map((entry) => entry.game))) {
    const points = games.map((entry, index) => [entry, index]).filter(([entry]) => entry.game === game);
    const line = points.map(([entry, index]) => `${x(index).toFixed(1)},${y(entry.mu).toFixed(1)}`).join(" ");
    const colour = COLOURS[game] || "currentColor";
    root.append(svg("polyline", { points: line, fill: "none", stroke: colour, "stroke-width": 2, "data-game": game }));
    for (const [entry, index] of points) {
      root.append(svg("circle", { cx: x(index), cy: y(entry.mu), r: 3, fill: colour }));
    }
  }
  return root;
}
