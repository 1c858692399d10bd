"""How a name is told from another: a registered bot's name, a guest's nick, a seeker's name.

Two names are the same name when they look alike, not only when their code points are equal:
``Thorin``, ``thorin``, ``" Thorin"``, and ``Thorin`` written with a Greek omicron for its o,
a full-width T, a T with a dot above or a dotless i are all one name. Each name has two forms
(``name_forms``), and two names look alike when they share one. Both start from the text in
Unicode's compatibility form (NFKC), its edges' white space trimmed, without what cannot be
seen; then come its confusables skeleton (Unicode's TR39, from ICU's data through PyICU: its
``SpoofChecker`` is TR39's reference implementation), without combining marks (the skeleton
keeps them: a T with a dot above becomes T and a combining dot, which is dropped too), and its
case fold, until nothing changes. The first form folds the case first, so that names differing
only in case are one (``THORIN`` is ``Thorin``, which the skeleton alone would not say: it
makes a capital I an l); the second takes the skeleton first, so that look-alikes in the case
they are written in are one (``SeIfmade`` with a capital I is ``Selfmade``, which folding first
would not say: it makes that I an i).

A nick with a control character, an invisible one (a zero-width space, a joiner, a direction
mark: Unicode's default-ignorable code points), a private-use, surrogate or unassigned one is
refused (``refused_character``): what cannot be seen cannot be told apart.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

import icu  # PyICU: ICU's TR39 confusables data and skeleton

# Categories of characters no name may hold: controls, formats (zero-width spaces, joiners,
# direction marks), surrogates, private use, unassigned, line and paragraph separators.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
FORM_ROUNDS = 4  # skeleton and fold again until stable: two rounds are enough for any name seen
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


def name_forms(name: str) -> tuple[str, ...]:
    """What ``name`` is compared by: two names that share a form look alike (see the module).
    One form or two (a tuple: a registered bot keeps its forms, 200,000 bots on a node)."""
    seen = "".join(character for character in name if not _unseen(character))
    text = unicodedata.normalize("NFKC", seen).strip()
    folded_first = _stable(text.casefold())
    skeleton_first = _stable(_unmarked_skeleton(text).casefold())
    return (folded_first,) if skeleton_first == folded_first else (folded_first, skeleton_first)


def _stable(text: str) -> str:
    """The fold of the skeleton, again until it no longer changes."""
    for _ in range(FORM_ROUNDS):
        again = _unmarked_skeleton(text).casefold()
        if again == text:
            break
        text = again
    return text


def _unmarked_skeleton(text: str) -> str:
    skeleton = str(_SPOOF.getSkeleton(0, text))
    return "".join(
        character
        for character in unicodedata.normalize("NFD", skeleton)
        if unicodedata.category(character) != "Mn"
    )


@lru_cache(maxsize=FORMS_CACHED)
def remembered_forms(name: str) -> tuple[str, ...]:
    """``name_forms``, remembered: for names compared again and again (the seek pool's)."""
    return name_forms(name)


def same_name(first: str, second: str) -> bool:
    """Do the two names look alike (one bot, or one taking the other's name)?"""
    if first == second:
        return True
    theirs = remembered_forms(second)
    return any(form in theirs for form in remembered_forms(first))
