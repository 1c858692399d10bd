// /bots/NAME, its hosted versions: the list (from /api/bots/NAME/versions, each with its SPRT
// match against the active one, when it was tried) and the owner's
// upload form. The key typed into the form goes with the upload only: the page never stores it
// (no storage, no cookie, the field cleared once sent) and never shows it.

import { byId, el, setText, show } from "./dom.js";
import { failure, fetchJson, formatTime, getJson, refusal } from "./records.js";

const name = decodeURIComponent(location.pathname.split("/").pop());
const form = byId("upload");
const status = byId("upload-status");
form.addEventListener("submit", upload);
loadVersions();

async function loadVersions() {
  const answer = await getJson(`/api/bots/${encodeURIComponent(name)}/versions`);
  if (!answer.ok) {
    setText(status, failure(answer, "the versions"));
    return;
  }
  const versions = answer.body.versions;
  show(byId("no-versions"), versions.length === 0);
  byId("versions-body").replaceChildren(...versions.map(versionRow));
}

function versionRow(version) {
  return el(
    "tr",
    { dataset: { number: version.number, state: version.state } },
    el("td", { className: "num", text: version.number }),
    el("td", { text: version.state }),
    el("td", {}, el("code", { text: version.run })),
    el("td", { text: version.games.join(", ") || "every game", dataset: { col: "games" } }),
    el("td", { className: "num", text: version.files }),
    el("td", { className: "num", text: `${Math.ceil(version.archiveBytes / 1024)} KiB` }),
    el("td", {}, el("code", { text: version.hash.slice(0, 12), attrs: { title: version.hash } })),
    el("td", { text: formatTime(version.uploadedAt) }),
    el("td", { text: trialText(version.sprt), dataset: { col: "trial" } }),
  );
}

/** A version's SPRT match against the active one (tavern bots try), in a few words. */
function trialText(trial) {
  if (!trial) return "";
  const verdict = { H1: "stronger", H0: "not stronger" }[trial.verdict] ?? "undecided";
  const elo = `${trial.elo >= 0 ? "+" : ""}${trial.elo}${trial.eloError === null ? "" : ` ± ${trial.eloError}`}`;
  return `${verdict}: ${trial.wins}–${trial.draws}–${trial.losses} in ${trial.games}, Elo ${elo}`;
}

async function upload(event) {
  event.preventDefault();
  const data = new FormData(form);
  if (!byId("upload-activate").checked) data.set("activate", "0");
  byId("upload-key").value = ""; // sent once, kept nowhere
  setText(status, "Uploading…");
  const { ok, status: answered, body } = await fetchJson(`/api/bots/${encodeURIComponent(name)}/versions`, {
    method: "POST",
    body: data,
  });
  if (!ok) {
    setText(status, `Not uploaded: ${refusal(answered, body)}.`);
    return;
  }
  const again = body.added ? "" : " (uploaded before)";
  setText(status, `Version ${body.number}${again}: ${body.files} files, ${body.state}.`);
  loadVersions();
}
