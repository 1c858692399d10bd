// The top bar's links to the games' own pages, from the registered games: each game's play page
// after the lobby ("Play Thud"), its other pages (Thud's "Clients") at the end; and a button to
// each play page where a page leaves room for them (`data-play-links`: the buttons' classes).
// Every page loads this module, so that a new game's pages show up without a shared page changing.

import { el } from "./dom.js";
import { GAMES, GAME_NAMES } from "./games.js";

const PLAYABLE = GAME_NAMES.filter((name) => GAMES[name].play);

function link(href, title, className = "") {
  const current = window.location.pathname === href;
  return el("a", { className, text: title, attrs: { href, "aria-current": current ? "page" : null } });
}

function playLinks(className = "") {
  return PLAYABLE.map((name) => link(GAMES[name].play, `Play ${GAMES[name].title}`, className));
}

for (const nav of document.querySelectorAll("nav.topnav")) {
  const plays = playLinks();
  const pages = GAME_NAMES.flatMap((name) => GAMES[name].pages.map((page) => link(page.href, page.title)));
  const lobby = nav.querySelector("a");
  if (lobby) lobby.after(...plays);
  else nav.prepend(...plays);
  nav.append(...pages);
}

for (const slot of document.querySelectorAll("[data-play-links]")) {
  slot.replaceWith(...playLinks(slot.dataset.playLinks));
}
