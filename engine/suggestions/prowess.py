"""The rules for what a character's class and body do in a fight or out of one: a class feature named (Rage, Second
Wind, Lay on Hands, Ki's moves, …) suggests use_feature with its name; grappling or shoving suggests grapple."""

from __future__ import annotations

import re

from ..rules import features
from .reading import C, N, Situation, Suggestion, rule

# The words a player uses for each feature (matched whole, in the message's lower case), and its option when it has
# one.
_FEATURE_WORDS: dict[str, tuple[str, str | None]] = {
    "rage": ("Rage", None), "second wind": ("Second Wind", None), "action surge": ("Action Surge", None),
    "lay on hands": ("Lay on Hands", None), "lay hands on": ("Lay on Hands", None),
    "turn undead": ("Channel Divinity", "turn undead"), "preserve life": ("Channel Divinity", "preserve life"),
    "sacred weapon": ("Channel Divinity", "sacred weapon"), "channel divinity": ("Channel Divinity", None),
    "bardic inspiration": ("Bardic Inspiration", None), "inspire": ("Bardic Inspiration", None),
    "flurry of blows": ("Ki", "flurry of blows"), "patient defense": ("Ki", "patient defense"),
    "step of the wind": ("Ki", "step of the wind"), "stunning strike": ("Ki", "stunning strike"),
    "wild shape": ("Wild Shape", None), "arcane recovery": ("Arcane Recovery", None),
    "sorcery points": ("Sorcery Points", None), "font of magic": ("Sorcery Points", None),
    "reckless attack": ("Reckless Attack", None), "recklessly": ("Reckless Attack", None),
}
_FEATURE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _FEATURE_WORDS), key=len, reverse=True)) + r")\b")
_FIRST = frozenset(w.split()[0] for w in _FEATURE_WORDS)  # a message without one of these names no feature
_HOLDS = frozenset("grapple grapples grappled grappling wrestle wrestles wrestled wrestling shove shoves shoved shoving "
                   "tackle tackles tackled tackling pin".split())
_GRAPPLE = re.compile(r"\b(grapple[sd]?|grappling|wrestl\w*|shove[sd]?|shoving|tackl\w*|pin (him|her|it|them) down)\b")


@rule(N, C)
def class_feature(s: Situation) -> list[Suggestion]:
    ch = s.state.characters.get(s.actor_id or "")
    if ch is None or _FIRST.isdisjoint(s.reading.token_set):  # (cheap tests first: most messages name none)
        return []
    mine = {r.name for r in features.resources(ch)} | ({"Reckless Attack"} if ch.char_class == "barbarian"
                                                        and ch.level >= 2 else set())
    for found in _FEATURE.finditer(s.reading.raw.lower()):
        name, option = _FEATURE_WORDS[found.group(1)]
        if name in mine:
            args = {"character": ch.name, "feature": name} | ({"option": option} if option else {})
            return [Suggestion("use_feature", f"{ch.name} uses {name}: the engine spends it and applies it", 0.8,
                               args)]
    return []


@rule(N, C)
def grapple_or_shove(s: Situation) -> list[Suggestion]:
    if _HOLDS.isdisjoint(s.reading.token_set) or s.actor_id not in s.state.characters:
        return []
    found = _GRAPPLE.search(s.reading.raw.lower())
    if found is None:
        return []
    kind = "shove" if found.group(1).startswith(("shov", "tackl")) else "grapple"
    return [Suggestion("grapple", f"a {kind}: a contest the engine rolls", 0.7, {"kind": kind})]
