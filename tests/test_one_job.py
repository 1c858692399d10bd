"""One job per file: the arena's Python modules stay small enough to read in one sitting.

No module of the server, the visor or the ``tavern`` command over 600 lines, no class over 350,
no function over 80 (issue 31): past these, a module has taken on a second job, and its parts go
to modules of their own (as the match's seats, views and clock, the records' writer thread).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("server", "visor", "tavern_cli")
FILE_LINES = 600
CLASS_LINES = 350
FUNCTION_LINES = 80


def _too_long() -> list[str]:
    """Every module, class and function over its bound, with its length."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            where = path.relative_to(ROOT)
            lines = len(source.splitlines())
            if lines > FILE_LINES:
                found.append(f"{where}: {lines} lines")
            for node in ast.walk(ast.parse(source, str(where))):
                if isinstance(node, ast.ClassDef):
                    bound = CLASS_LINES
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    bound = FUNCTION_LINES
                else:
                    continue
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > bound:
                    found.append(f"{where}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_module_class_or_function_is_over_its_bound() -> None:
    assert _too_long() == []


def test_the_scan_reads_every_package() -> None:
    """A scan that found no file would pass whatever the files are."""
    for package in PACKAGES:
        assert len(list((ROOT / package).rglob("*.py"))) > 5
