// /bots/NAME, its logs for its owner: the key typed in is sent once with the request (POST, in
// the body) and kept nowhere; the answer lists the bot's last games as the arena ran it.

import { byId, el, setText } from "./dom.js";
import { fetchJson, formatTime, refusal } from "./records.js";

const name = decodeURIComponent(location.pathname.split("/").pop());
byId("logs").addEventListener("submit", showLogs);

async function showLogs(event) {
  event.preventDefault();
  const key = byId("logs-key").value;
  byId("logs-key").value = ""; // sent once, kept nowhere
  const status = byId("logs-status");
  setText(status, "Loading…");
  const { ok, status: answered, body } = await fetchJson(`/api/bots/${encodeURIComponent(name)}/logs`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ key }),
  });
  if (!ok) {
    setText(status, `Not shown: ${refusal(answered, body)}.`);
    return;
  }
  const count = body.games.length;
  setText(status, count === 0 ? "No game yet." : count === 1 ? "Its last game." : `Its last ${count} games, newest first.`);
  byId("logs-list").replaceChildren(...body.games.map(gameEntry));
}

function gameEntry(game) {
  const result = game.result ? `${game.result.reason}, winner ${game.result.winner ?? "none"}` : game.status;
  const turns = game.turns.map((turn) =>
    el(
      "li",
      { dataset: { turn: turn.number } },
      `turn ${turn.number}${turn.cpuMs === null ? "" : `: ${turn.cpuMs} ms CPU`}`,
      turn.stderr ? el("pre", { className: "stderr", text: turn.stderr }) : null,
    ),
  );
  return el(
    "li",
    { dataset: { game: game.id } },
    el("a", { href: `/replay/${encodeURIComponent(game.id)}`, text: `${game.game} as ${game.seat}` }),
    ` ${formatTime(game.startedAt)}: ${result}; it ended: ${game.exit ?? "unknown"}`,
    game.stderr ? el("pre", { className: "stderr", text: game.stderr }) : null,
    el("ol", { className: "turn-logs" }, ...turns),
  );
}
