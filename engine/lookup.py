"""`/lookup`: the rules' entries for players, in our own words from the SRD 5.1 data the engine plays by (spells,
weapons and armour, conditions, the SRD's creatures), and the creatures of the game being played (the stat blocks of
its encounters and people, which win over the SRD's of the same name). A name not found says the nearest ones."""

from __future__ import annotations

import difflib
from typing import Literal

from . import bestiary
from .errors import BadInput
from .rules.conditions import DESCRIPTIONS as CONDITIONS
from .rules.data import rules
from .rules.spells import find_spell, level_name
from .state import GameState

Kind = Literal["spell", "item", "condition", "monster"]


def names(kind: str, state: GameState | None = None) -> list[str]:
    """Every name `kind` knows, for autocompletion."""
    if kind == "spell":
        from .rules.spells import spell_index

        return sorted(s.name for s in spell_index().values())
    if kind == "item":
        return sorted({*rules().weapons, *rules().armor, *((i.name for i in state.items.values()) if state else ())})
    if kind == "condition":
        return sorted(CONDITIONS)
    if kind == "monster":
        own = sorted(creatures(state)) if state else []  # this game's first: what the table meets
        return own + sorted(set(bestiary.names()) - set(own))
    raise BadInput(f"'{kind}' is not something to look up: spell, item, condition or monster.")


def _nearest(name: str, known: list[str], what: str) -> BadInput:
    close = difflib.get_close_matches(name.lower(), [k.lower() for k in known], n=3, cutoff=0.5)
    shown = [next(k for k in known if k.lower() == c) for c in close]
    return BadInput(f"No {what} called '{name}'." + (f" Did you mean {', '.join(shown)}?" if shown else ""))


def creatures(state: GameState) -> dict[str, str]:
    """The stat blocks this game knows, by name: its encounters' foes and its people who have one."""
    found: dict[str, str] = {}
    for enc in state.encounters.values():
        for t in enc.enemies:
            attacks = "; ".join(a.line() for a in t.actions) or t.attacks or "none listed"
            found.setdefault(t.name, f"**{t.name}**" + (f" (CR {t.cr})" if t.cr else "") +
                             f"\nAC {t.ac}, HP {t.hp}" + (f", speed {t.speed}" if t.speed else "") +
                             (f"\n{_scores(t.abilities)}" if t.abilities else "") + f"\nAttacks: {attacks}"
                             + _defences(t.defences))
    for npc in state.npcs.values():
        if npc.actions or npc.abilities or npc.cr:
            attacks = "; ".join(a.line() for a in npc.actions) or "none listed"
            found.setdefault(npc.name, f"**{npc.name}**" + (f" (CR {npc.cr})" if npc.cr else "") +
                             f"\nAC {npc.ac}, HP {npc.max_hp}" + (f", speed {npc.speed}" if npc.speed else "") +
                             (f"\n{_scores(npc.abilities)}" if npc.abilities else "") + f"\nAttacks: {attacks}"
                             + _defences(npc.defences))
    return found


def _scores(abilities) -> str:
    return " ".join(f"{a[:3].upper()} {getattr(abilities, a)} ({abilities.mod(a):+d})"
                    for a in type(abilities).model_fields)


def _defences(d) -> str:
    if d is None:
        return ""
    parts = [f"{label}: {', '.join(v)}" for label, v in (("resists", d.resistances), ("immune to", d.immunities),
                                                          ("vulnerable to", d.vulnerabilities)) if v]
    return ("\n" + "; ".join(parts).capitalize()) if parts else ""


def lookup(kind: str, name: str, state: GameState | None = None) -> str:
    """The entry as Markdown; BadInput naming the nearest when there is none."""
    name = " ".join(name.split())
    if kind == "spell":
        try:
            s = find_spell(name)
        except BadInput:
            raise _nearest(name, names("spell"), "spell") from None
        lines = [f"**{s.name}** — {level_name(s)} {s.school}" + (" (ritual)" if s.ritual else ""),
                 f"Casting time {s.casting_time}; range {s.range}; duration {s.duration}"
                 + ("; concentration" if s.concentration else ""),
                 "Classes: " + ", ".join(s.classes)]
        if s.attack:
            lines.append(f"A {s.attack} spell attack.")
        if s.save:
            lines.append(f"{s.save.capitalize()} saving throw" + (", half damage on a success." if s.half else "."))
        if s.damage:
            more = f" (+{s.damage.per_slot} a slot level higher)" if s.damage.per_slot else ""
            lines.append(f"Damage {s.damage.dice} {s.damage.type}{more}" + (f"; {s.count} at once" if s.count > 1 else ""))
        if s.healing:
            lines.append(f"Healing {s.healing.dice}" + (f" (+{s.healing.per_slot} a slot level higher)" if s.healing.per_slot else ""))
        if s.area:
            lines.append(f"Area: {s.area}")
        lines.append(s.description)
        return "\n".join(lines)
    if kind == "item":
        key = name.lower()
        w = rules().weapons.get(key)
        if w is not None:
            reach = f"; range {w.range[0]}/{w.range[1]} ft" if w.range else ""
            props = ", ".join(w.properties) or "no properties"
            return (f"**{w.name}** — {w.category} {w.kind} weapon\nDamage {w.damage} {w.type}"
                    + (f" ({w.versatile} in two hands)" if w.versatile else "") + f"; {props}{reach}"
                    + (f"; uses {w.ammunition}" if w.ammunition else ""))
        a = rules().armor.get(key)
        if a is not None:
            dex = "" if a.category == "shield" else " (no DEX)" if a.category == "heavy" else \
                " + DEX" if a.dex_cap is None else f" + DEX (at most +{a.dex_cap})"
            return (f"**{a.name}** — {a.category} {'' if a.category == 'shield' else 'armour'}".rstrip()
                    + f"\nAC {'+' if a.category == 'shield' else ''}{a.ac}{dex}"
                    + (f"; needs STR {a.strength} (else 10 ft slower)" if a.strength else "")
                    + ("; disadvantage on Stealth" if a.stealth_disadvantage else ""))
        item = next((i for i in (state.items.values() if state else []) if i.name.lower() == key or i.id == key), None)
        if item is not None:
            price = f"{item.price.amount} {item.price.coin}" if item.price else "no listed price"
            return (f"**{item.name}** — {price}" + (f", {item.weight:g} lb" if item.weight is not None else "")
                    + (f"\n{item.description}" if item.description else ""))
        raise _nearest(name, names("item", state), "item")
    if kind == "condition":
        text = CONDITIONS.get(name.lower())
        if text is None:
            raise _nearest(name, names("condition"), "condition")
        return f"**{name.lower().capitalize()}**\n{text}"
    if kind == "monster":
        known = creatures(state) if state is not None else {}
        found = next((v for k, v in known.items() if k.lower() == name.lower()), None)
        if found is not None:
            return found
        srd = bestiary.find(name)
        if srd is None:
            raise _nearest(name, names("monster", state), "creature in this game or the SRD")
        head, *rest = srd.block()
        return f"**{srd.name}** (SRD)\n" + head.split(": ", 1)[1] + "\n" + "\n".join(rest)
    raise BadInput(f"'{kind}' is not something to look up: spell, item, condition or monster.")
