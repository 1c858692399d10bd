"""How a name is told from another: a registered bot's name, a guest's nick, a seeker's name.

Two names are the same name when they look alike, not only when their code points are equal:
``Thorin``, ``thorin``, ``" Thorin"``, and ``Thorin`` written with a Greek omicron for its o,
a full-width T, a T with a dot above or a dotless i are all one name. Each is compared by its
``name_form``: the text in Unicode's compatibility form (NFKC), its edges' white space trimmed,
case folded, then its confusables skeleton (Unicode's TR39, from ICU's data through PyICU: its
``SpoofChecker`` is TR39's reference implementation) without combining marks (the skeleton
keeps them: a T with a dot above becomes T and a combining dot, which is dropped too). The fold
and the skeleton are taken again until nothing changes, so that a look-alike across case
(``0`` is ``O``, which folds to ``o``) is one name too.

A nick with a control character, an invisible one (a zero-width space, a joiner, a direction
mark: Unicode's default-ignorable code points), a private-use, surrogate or unassigned one is
refused (``visible_name``): what cannot be seen cannot be told apart.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import icu  # PyICU: ICU's TR39 confusables data and skeleton

# Categories of characters no name may hold: controls, formats (zero-width spaces, joiners,
# direction marks), surrogates, private use, unassigned, line and paragraph separators.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
FORM_ROUNDS = 4  # fold and skeleton again until stable: two rounds are enough for any name seen
FORMS_CACHED = 65_536  # names whose form the seek pool and the challenges remember

_SPOOF = icu.SpoofChecker()


def _unseen(character: str) -> bool:
    return unicodedata.category(character) in REFUSED_CATEGORIES or bool(
        icu.Char.hasBinaryProperty(character, icu.UProperty.DEFAULT_IGNORABLE_CODE_POINT)
    )


def refused_character(name: str) -> str | None:
    """The first character a name may not hold, described (``U+200B at 7``), or None."""
    for index, character in enumerate(name):
        if _unseen(character):
            return f"U+{ord(character):04X} at {index + 1}"
    return None


def name_form(name: str) -> str:
    """What ``name`` is compared by: two names with one form look alike (see the module).
    What cannot be seen is no part of it."""
    seen = "".join(character for character in name if not _unseen(character))
    text = unicodedata.normalize("NFKC", seen).strip()
    for _ in range(FORM_ROUNDS):
        skeleton = str(_SPOOF.getSkeleton(0, text.casefold()))
        unmarked = "".join(
            character
            for character in unicodedata.normalize("NFD", skeleton)
            if unicodedata.category(character) != "Mn"
        )
        if unmarked == text:
            break
        text = unmarked
    return text


@lru_cache(maxsize=FORMS_CACHED)
def remembered_form(name: str) -> str:
    """``name_form``, remembered: for names compared again and again (the seek pool's)."""
    return name_form(name)


def same_name(first: str, second: str) -> bool:
    """Do the two names look alike (one bot, or one taking the other's name)?"""
    return first == second or remembered_form(first) == remembered_form(second)
