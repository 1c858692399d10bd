"""Each game carries its own knowledge: outside ``server/games/``, no code tests a game's name.

The arena's modules, the visor and the bots ask a game object from the registry
(``server.games.GAMES``) for what differs between games; a new game is added under
``server/games/`` alone. The scan reads every Python file's syntax tree and looks for a game's
name (as the registry spells it) compared, used as a key or an index, matched, looked up with
``get``, or kept in a variable to be compared later. A name passed on as a value (a program's
name, a request's field) is not a test and is not reported.

The pages' JavaScript (``visor/static/js``) is scanned too, by its tokens: a game's name
compared, a ``case``, a key or a property, an index, looked up (``includes``, ``get``...),
listed in an array, or chosen in a condition or kept in a variable. Each game's own view, labels
and words are in its package (``server/games/<game>/web/game.js``), which the shared pages load
by name from ``/games/index.json``.

The pages' HTML and CSS (``visor/static``, the vendored editor apart) are scanned for a game's
name or a seat's (``team1``, ``dwarf``...) as a word of a selector, a class, an id, a link or a
value, and for a game's title in their text: the top bar's links to a game's pages, the lobby's
words about the games and each seat's colour come from the games (``nav.js``, each game's
``game.css``), so that a new game touches no shared page or stylesheet either.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path

from server.games import GAMES

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("server", "visor", "bots")
GAMES_PACKAGE = ROOT / "server" / "games"
LOOKUPS = frozenset({"get", "pop", "setdefault"})
PAGES_STATIC = ROOT / "visor" / "static"
PAGES_SCRIPTS = PAGES_STATIC / "js"
VENDORED = PAGES_STATIC / "vendor"  # a third party's files, the code editor's
BRAND = "Dwarven Tavern Arena"  # the arena's name, in every page's title and top bar
TEXT_ATTRIBUTES = frozenset({"title", "alt", "aria-label", "placeholder"})  # read, not matched
WORDS = re.compile(r"[A-Za-z0-9]+")
CSS_COMMENTS = re.compile(r"/\*.*?\*/", re.DOTALL)
JS_COMMENTS = re.compile(r"/\*.*?\*/|(?<![:\\])//[^\n]*", re.DOTALL)


def _constants(node: ast.AST) -> Iterator[ast.Constant]:
    """The string constants of an expression, inside tuples, lists and sets too."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _constants(element)


def _tested(tree: ast.AST) -> Iterator[ast.Constant]:
    """Every string constant that a test or a lookup uses."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                yield from _constants(operand)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None:
                    yield from _constants(key)
        elif isinstance(node, ast.Subscript):
            yield from _constants(node.slice)
        elif isinstance(node, ast.MatchValue):
            yield from _constants(node.value)
        elif isinstance(node, ast.Call) and node.args:
            if isinstance(node.func, ast.Attribute) and node.func.attr in LOOKUPS:
                yield from _constants(node.args[0])
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            yield from _constants(node.value)


def game_name_tests(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, name) of each place the source tests one of the games' ``names``."""
    found = {(c.lineno, c.value) for c in _tested(ast.parse(source)) if c.value in names}
    return sorted(found)


def _scanned_files() -> list[Path]:
    files = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if not path.is_relative_to(GAMES_PACKAGE):
                files.append(path)
    return files


def _js_patterns(name: str) -> list[re.Pattern[str]]:
    """How JavaScript tests the name ``name``: the literal, a key, a property."""
    literal = rf"""(["'`]){re.escape(name)}\1"""
    word = re.escape(name)
    return [
        re.compile(rf"(?:===?|!==?)\s*{literal}"),  # compared, the name on the right
        re.compile(rf"{literal}\s*(?:===?|!==?)"),  # or on the left
        re.compile(rf"\bcase\s+{literal}\s*:"),  # a case of a switch
        re.compile(rf"[{{,]\s*(?:{word}|{literal})\s*:"),  # a key of an object
        re.compile(rf"\.{word}\b(?!\s*\()|\[\s*{literal}\s*\]"),  # a property, an index
        re.compile(rf"\.(?:includes|indexOf|get|has)\(\s*{literal}"),  # looked up
        re.compile(rf"[\[,]\s*{literal}\s*[,\]]"),  # listed in an array
        re.compile(rf"(?:[^=!<>]=|\?|&&|\|\|)\s*{literal}"),  # kept, chosen in a condition
    ]


def js_game_name_tests(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, name) of each place a script tests one of the games' ``names``; comments are
    not code."""
    code = JS_COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), source)
    found = set()
    for name in names:
        for pattern in _js_patterns(name):
            for match in pattern.finditer(code):
                found.add((code.count("\n", 0, match.start()) + 1, name))
    return sorted(found)


def _named(text: str, names: frozenset[str]) -> set[str]:
    """The ``names`` that are words of ``text`` ("seat-team1" has the word "team1")."""
    return {word for word in WORDS.findall(text.lower()) if word in names}


def _titled(text: str, titles: frozenset[str]) -> set[str]:
    """The ``titles`` written in ``text``, the arena's own name apart."""
    text = text.replace(BRAND, "")
    return {title for title in titles if re.search(rf"\b{re.escape(title)}\b", text)}


def css_game_names(source: str, names: frozenset[str]) -> list[tuple[int, str]]:
    """(line, name) of each game's or seat's name in a stylesheet's rules; comments are not
    rules."""
    code = CSS_COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), source)
    return sorted(
        (number, name)
        for number, line in enumerate(code.splitlines(), 1)
        for name in _named(line, names)
    )


class _PageScan(HTMLParser):
    """Collects the games a page names: in a tag's attributes, or by title in its text."""

    def __init__(self, names: frozenset[str], titles: frozenset[str]) -> None:
        super().__init__()
        self.names = names
        self.titles = titles
        self.found: set[tuple[int, str]] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line = self.getpos()[0]
        for attribute, value in attrs:
            if value is None:
                continue
            if attribute in TEXT_ATTRIBUTES:
                self.found |= {(line, title) for title in _titled(value, self.titles)}
            else:
                self.found |= {(line, name) for name in _named(value, self.names)}

    def handle_data(self, data: str) -> None:
        line = self.getpos()[0]
        self.found |= {(line, title) for title in _titled(data, self.titles)}


def html_game_names(
    source: str, names: frozenset[str], titles: frozenset[str]
) -> list[tuple[int, str]]:
    """(line, name) of each game's or seat's name in a page's tags (a link, a class, an id, a
    value) and each game's title in its text (the arena's name apart); comments are not read."""
    scan = _PageScan(names, titles)
    scan.feed(source)
    scan.close()
    return sorted(scan.found)


def _found(files: list[Path], scan: Callable[[Path], list[tuple[int, str]]]) -> str:
    """Every game name a scan finds in the files, a line each: ``path:line: 'name'``."""
    return "\n".join(
        f"{path.relative_to(ROOT)}:{line}: {name!r}" for path in files for line, name in scan(path)
    )


def test_the_scan_finds_each_kind_of_game_name_test() -> None:
    names = frozenset({"thud", "tavern"})
    source = "\n".join(
        [
            'if game == "thud": pass',  # 1
            'x = 1 if record["game"] != "tavern" else 2',  # 2
            'ok = game in ("thud", "tavern")',  # 3
            'KEYS = {"thud": 1}',  # 4
            'y = PLAYERS["tavern"]',  # 5
            'z = TIMES.get("thud", 200)',  # 6
            'GAME = "thud"',  # 7
            "match game:",  # 8
            '    case "tavern": pass',  # 9
            'parser = make(prog="tavern")',  # 10: a program's name, not a test
            'send({"type": "join", "game": game})',  # 11: a field, not a game's name
        ]
    )
    assert game_name_tests(source, names) == [
        (1, "thud"),
        (2, "tavern"),
        (3, "tavern"),
        (3, "thud"),
        (4, "thud"),
        (5, "tavern"),
        (6, "thud"),
        (7, "thud"),
        (9, "tavern"),
    ]


def test_no_game_name_is_tested_outside_the_games_package() -> None:
    names = frozenset(GAMES)
    assert len(names) >= 2  # the registry the scan reads is the arena's
    files = _scanned_files()
    assert len(files) > 40  # the whole of the arena, the visor and the bots
    assert {"league.py", "seats.py", "replay_image.py", "house.py"} <= {p.name for p in files}
    found = _found(files, lambda path: game_name_tests(path.read_text(), names))
    assert not found, f"a game's name tested outside server/games/:\n{found}"


def test_the_script_scan_finds_each_kind_of_game_name_test() -> None:
    names = frozenset({"thud", "tavern"})
    source = "\n".join(
        [
            'if (game === "thud") draw();',  # 1
            "const x = 'tavern' !== game ? 1 : 2;",  # 2
            'const KEYS = { thud: 1, "tavern": 2 };',  # 3
            "const y = PLAYERS.thud;",  # 4
            'const z = TIMES["tavern"];',  # 5
            'if (names.includes("thud")) go();',  # 6
            'const ORDER = ["dwarf", "tavern"];',  # 7
            'const GAME = "thud";',  # 8
            "switch (game) {",  # 9
            '  case "tavern": break;',  # 10
            "}",  # 11
            'const w = ok ? "thud" : other;',  # 12
            'socket.send({ type: "play", game: game, nick: "thud" });',  # 13: a value
            '// if (game === "thud") in a comment',  # 14: not code
            'fetch(`/api/ladder?game=${game}`); load("/rules/thud");',  # 15: within a text
            "const view = new ThudView(canvas); thudstone(board);",  # 16: other words
        ]
    )
    assert js_game_name_tests(source, names) == [
        (1, "thud"),
        (2, "tavern"),
        (3, "tavern"),
        (3, "thud"),
        (4, "thud"),
        (5, "tavern"),
        (6, "thud"),
        (7, "tavern"),
        (8, "thud"),
        (10, "tavern"),
        (12, "thud"),
    ]


def test_no_game_name_is_tested_in_the_pages_scripts() -> None:
    """The shared pages ask each game's module (loaded by name) for what differs between
    games: a new game touches none of their scripts."""
    names = frozenset(GAMES)
    scripts = sorted(PAGES_SCRIPTS.rglob("*.js"))
    assert {"watch.js", "replay.js", "lobby.js", "panel.js", "games.js"} <= {
        p.name for p in scripts
    }
    found = _found(scripts, lambda path: js_game_name_tests(path.read_text(), names))
    assert not found, f"a game's name tested in the pages' scripts:\n{found}"


def test_the_page_scan_finds_games_in_markup_and_styles() -> None:
    names = frozenset({"thud", "tavern", "dwarf", "team1"})
    titles = frozenset({"Thud", "Dwarven Tavern"})
    css = "\n".join(
        [
            ".seat-team1 .swatch { background: red; }",  # 1
            '#clock[data-seat="dwarf"] { border: 0; }',  # 2
            "/* the Tavern's legend, .seat-dwarf */",  # 3: a comment
            ".seat { border-color: var(--seat-colour, var(--line)); }",  # 4: no game
            ".cm-s-tavern .cm-keyword { color: red; }",  # 5
            ".thudstone rect { fill: grey; }",  # 6: another word
        ]
    )
    assert css_game_names(css, names) == [(1, "team1"), (2, "dwarf"), (5, "tavern")]
    html = "\n".join(
        [
            "<title>Lobby · Dwarven Tavern Arena</title>",  # 1: the arena's name
            '<nav><a href="/">Lobby</a><a href="/play/thud">Play</a></nav>',  # 2
            "<p>Bots play <strong>Dwarven Tavern</strong> and Thud.</p>",  # 3
            '<span class="seat-team1" id="x">A</span>',  # 4
            "<!-- Play Thud, /play/thud -->",  # 5: a comment
            '<input value="dwarf"><code>tavern play --output game.jsonl</code>',  # 6
            '<a title="tavern replay opens it" aria-label="Thud\'s page">x</a>',  # 7
            "<p>Thudstones and dwarven ale.</p>",  # 8: other words
        ]
    )
    assert html_game_names(html, names, titles) == [
        (2, "thud"),
        (3, "Dwarven Tavern"),
        (3, "Thud"),
        (4, "team1"),
        (6, "dwarf"),
        (7, "Thud"),
    ]


def test_no_game_is_named_in_the_pages_markup_or_styles() -> None:
    """The top bar's game pages, the lobby's words about the games and the seats' colours come
    from the registered games: a new game touches no shared page or stylesheet."""
    names = frozenset(GAMES) | {seat for game in GAMES.values() for seat in game.seat_names}
    assert {"team1", "dwarf", "troll"} <= names
    titles = frozenset(game.web.title for game in GAMES.values())
    files = sorted(
        path
        for path in PAGES_STATIC.rglob("*")
        if path.suffix in {".html", ".css"} and not path.is_relative_to(VENDORED)
    )
    assert {"index.html", "watch.html", "not-found.html", "visor.css", "rules.css"} <= {
        p.name for p in files
    }

    def named(path: Path) -> list[tuple[int, str]]:
        if path.suffix == ".css":
            return css_game_names(path.read_text(), names)
        return html_game_names(path.read_text(), names, titles)

    found = _found(files, named)
    assert not found, f"a game named in the pages' markup or styles:\n{found}"


def test_each_game_brings_its_web_side_from_its_package() -> None:
    """Each game's module, rules page and own pages are files of its package."""
    for name, game in GAMES.items():
        folder = game.web.folder
        assert folder.is_relative_to(GAMES_PACKAGE / name), name
        for file in ("game.js", "game.css", "rules.html"):
            assert (folder / file).is_file(), (name, file)
        for route, path in game.web.page_routes(name).items():
            assert path.is_file() and path.is_relative_to(folder), (name, route)
        if game.client_adapter is not None:
            assert game.client_adapter.is_relative_to(folder), name


def test_each_game_gives_one_score_per_score_name() -> None:
    """``Codec.scores`` pairs the names with the rules' scores as they come (every turn)."""
    for game in GAMES.values():
        codec = game.codec_for(game.default_settings())
        players = [codec.player_from_join({"nick": f"p{n}"}) for n in range(len(codec.seat_names))]
        scores = codec.rules.scores(codec.rules.initial_state(players))
        assert len(scores) == len(codec.score_names), game.name
