// /bots/NAME: a registered bot's rating over time (an SVG chart drawn here, no library, with
// labelled axes: μ up the side, the games' dates along the bottom), its rated games (each with
// its date, a link to its replay, and the opponent's μ as the game began) and its head-to-head,
// from /api/bots/NAME.

import { byId, el, setText, show } from "./dom.js";
import { gameOf } from "./games.js";
import { failure, getJson } from "./records.js";

const SVG = "http://www.w3.org/2000/svg";
const HEIGHT = 260;
const MARGIN = { left: 48, right: 16, top: 14, bottom: 52 }; // room for the axes' labels
const MIN_LABEL_GAP = 84; // px between two date labels on the x axis, at least
const NEW_MU = 25; // a new bot's μ
const DAY_S = 86400;

/** A game's colour in the chart (its module's accent). */
const accentOf = (game) => (gameOf(game) ? gameOf(game).accent : "currentColor");

const name = decodeURIComponent(location.pathname.split("/").pop());
let history = null; // the bot's rated games, newest first, once loaded
let drawnWidth = 0;
load();
// The chart is drawn at its card's width: again when that changes (a phone turned round).
addEventListener("resize", () => requestAnimationFrame(drawChart));

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
  history = bot.history;
  drawChart();
  byId("games-body").replaceChildren(...bot.history.map(gameRow));
  showVoided(bot.voided);
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

/** A rated game: when (a link to its replay) and which game, the opponent and its μ as the
 * game began (or its μ now, so labelled, if the records lack that), the result and μ after. */
function gameRow(game) {
  const then = game.opponentMu === null ? "–" : game.opponentMu.toFixed(1);
  const opponentMu = game.opponentMuAt === "now" ? `${then} (now)` : then;
  return el(
    "tr",
    { dataset: { game: game.gameId } },
    el(
      "td",
      { className: "played" },
      el("a", { text: formatDate(game.ratedAt), attrs: { href: `/replay/${encodeURIComponent(game.gameId)}`, title: "its replay" } }),
      el("span", { className: "played-game", text: `${game.game}, ${formatClock(game.ratedAt)}` }),
    ),
    el(
      "td",
      { className: "opponent" },
      el("a", { text: game.opponent, attrs: { href: `/bots/${encodeURIComponent(game.opponent)}` } }),
      el("span", { className: "opponent-mu", text: `μ ${opponentMu}` }),
    ),
    el("td", { text: game.result }),
    el("td", { className: "num", text: game.mu.toFixed(1) }),
  );
}

/** Its games the arena broke (a worker lost, a bot it could not start, its own loop stalled):
 * rated for nobody, each a link to its replay. */
function showVoided(voided) {
  const line = byId("voided");
  show(line, voided.length > 0);
  line.replaceChildren(
    `Voided by the arena, rated for nobody (${voided.length}): `,
    ...voided.flatMap((game, index) => [
      index ? ", " : "",
      el("a", {
        text: `${game.game} against ${game.opponent}, ${formatDate(game.finishedAt)}`,
        attrs: { href: `/replay/${encodeURIComponent(game.gameId)}` },
      }),
    ]),
  );
}

/** A day, with its year when it is not this year's. */
function formatDate(seconds) {
  const when = new Date(seconds * 1000);
  const year = when.getFullYear() === new Date().getFullYear() ? undefined : "numeric";
  return when.toLocaleDateString(undefined, { month: "short", day: "numeric", year });
}

function formatDay(seconds) {
  return new Date(seconds * 1000).toLocaleDateString(undefined, { month: "short", day: "numeric" });
}

function formatClock(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
}

function drawChart() {
  const holder = byId("chart");
  const width = Math.floor(holder.clientWidth);
  if (history === null || width === 0 || width === drawnWidth) return;
  drawnWidth = width;
  holder.replaceChildren(chart(history, width));
}

function svg(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

/** Round steps of μ (1, 2 or 5 times a power of ten) from low to high, about `count` of them. */
function ticks(low, high, count) {
  const raw = (high - low) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * power).find((s) => s >= raw);
  const values = [];
  for (let value = Math.ceil(low / step) * step; value <= high + 1e-9; value += step) values.push(Number(value.toFixed(6)));
  return values;
}

/** Indices of the games whose dates label the x axis: the first, the last, and evenly between
 * as many as fit `MIN_LABEL_GAP` apart. */
function labelled(count, plotWidth) {
  if (count === 1) return [0];
  const most = Math.max(2, Math.min(count, Math.floor(plotWidth / MIN_LABEL_GAP) + 1));
  const chosen = new Set();
  for (let k = 0; k < most; k += 1) chosen.add(Math.round((k * (count - 1)) / (most - 1)));
  return [...chosen];
}

/** A line per game of μ after each rated game, oldest to newest, on shared, labelled axes. */
function chart(games, width) {
  const oldestFirst = [...games].reverse();
  const root = svg("svg", { width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}`, role: "img", class: "rating-svg" });
  root.append(svg("title", {}, `Rating over ${oldestFirst.length} rated games`));
  if (oldestFirst.length === 0) {
    root.append(svg("text", { x: width / 2, y: HEIGHT / 2, "text-anchor": "middle", class: "tick" }, "No rated games yet"));
    return root;
  }
  const left = MARGIN.left;
  const right = width - MARGIN.right;
  const top = MARGIN.top;
  const bottom = HEIGHT - MARGIN.bottom;
  const mus = oldestFirst.map((game) => game.mu);
  const low = Math.floor(Math.min(...mus, NEW_MU) - 1);
  const high = Math.ceil(Math.max(...mus, NEW_MU) + 1);
  const count = oldestFirst.length;
  const x = (index) => (count === 1 ? (left + right) / 2 : left + (index * (right - left)) / (count - 1));
  const y = (mu) => bottom - ((mu - low) * (bottom - top)) / (high - low);

  // The y axis: μ, its gridlines and labels.
  const yAxis = svg("g", { class: "y-axis" });
  for (const value of ticks(low, high, 5)) {
    yAxis.append(svg("line", { x1: left, y1: y(value), x2: right, y2: y(value), class: "grid" }));
    yAxis.append(svg("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end", class: "tick" }, String(value)));
  }
  yAxis.append(svg("line", { x1: left, y1: top, x2: left, y2: bottom, class: "axis" }));
  yAxis.append(svg("text", { x: 12, y: (top + bottom) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(top + bottom) / 2})`, class: "axis-title" }, "μ"));
  root.append(yAxis);

  // The x axis: the games in order, labelled by their dates (by their times, all on one day).
  const first = oldestFirst[0].ratedAt;
  const last = oldestFirst[count - 1].ratedAt;
  const oneDay = formatDay(first) === formatDay(last) && last - first < DAY_S;
  const xAxis = svg("g", { class: "x-axis" });
  xAxis.append(svg("line", { x1: left, y1: bottom, x2: right, y2: bottom, class: "axis" }));
  for (const index of labelled(count, right - left)) {
    const at = oldestFirst[index].ratedAt;
    // The first and last labels lie inward of their ticks: within the chart, not cut.
    const anchor = count === 1 ? "middle" : index === 0 ? "start" : index === count - 1 ? "end" : "middle";
    xAxis.append(svg("line", { x1: x(index), y1: bottom, x2: x(index), y2: bottom + 5, class: "tick-mark" }));
    xAxis.append(svg("text", { x: x(index), y: bottom + 18, "text-anchor": anchor, class: "tick" }, oneDay ? formatClock(at) : formatDay(at)));
  }
  const title = oneDay ? `Rated games on ${formatDay(first)}, by time` : "Rated games, by date";
  xAxis.append(svg("text", { x: (left + right) / 2, y: HEIGHT - 8, "text-anchor": "middle", class: "axis-title" }, title));
  root.append(xAxis);

  root.append(svg("line", { x1: left, y1: y(NEW_MU), x2: right, y2: y(NEW_MU), stroke: "#888", "stroke-dasharray": "4 4" }));
  const kinds = [...new Set(oldestFirst.map((entry) => entry.game))];
  for (const game of kinds) {
    const points = oldestFirst.map((entry, index) => [entry, index]).filter(([entry]) => entry.game === game);
    const line = points.map(([entry, index]) => `${x(index).toFixed(1)},${y(entry.mu).toFixed(1)}`).join(" ");
    const colour = accentOf(game);
    root.append(svg("polyline", { points: line, fill: "none", stroke: colour, "stroke-width": 2, "data-game": game }));
    for (const [entry, index] of points) {
      const dot = svg("circle", { cx: x(index), cy: y(entry.mu), r: 3, fill: colour });
      dot.append(svg("title", {}, `${formatDate(entry.ratedAt)}: μ ${entry.mu.toFixed(1)} after a ${entry.result} against ${entry.opponent}`));
      root.append(dot);
    }
  }
  if (kinds.length > 1) {
    kinds.forEach((game, index) => {
      root.append(svg("text", { x: right - 4, y: top + 12 + 14 * index, "text-anchor": "end", class: "legend", fill: accentOf(game) }, game));
    });
  }
  return root;
}
