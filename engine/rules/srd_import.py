"""How engine/rules/data/monsters.yaml was made: the SRD 5.1's creatures (CC-BY-4.0, Wizards of the Coast) as the
5e-bits/5e-database project structures them (src/2014/en/5e-SRD-Monsters.json, MIT), turned into our own compact
format. Only the numbers and names are kept (they are the SRD's facts: AC, hit points, scores, attacks, DCs);
descriptions are not copied: traits keep their name (engine/bestiary.py says the common ones in our words).

    python -m engine.rules.srd_import path/to/5e-SRD-Monsters.json > engine/rules/data/monsters.yaml
"""

from __future__ import annotations

import json
import re
import sys
from fractions import Fraction
from typing import Any

import yaml

from ..basics import DAMAGE_TYPES, XP_BY_CR

ABILITY = {"str": "strength", "dex": "dexterity", "con": "constitution", "int": "intelligence", "wis": "wisdom",
           "cha": "charisma"}
NONMAGICAL = re.compile(r"^((?:bludgeoning|piercing|and|slashing|,|\s)+) from nonmagical (?:weapons|attacks)")

def _cr(value: float | int) -> str:
    f = Fraction(value).limit_denominator(8)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def _feet(text: str) -> int:
    found = re.match(r"(\d+)", text)
    return int(found.group(1)) if found else 0


def _defences(entries: list[str], kind: str, out: dict[str, Any], notes: list[str]) -> None:
    for entry in entries:
        e = entry.strip().lower()
        if e in DAMAGE_TYPES:
            out.setdefault(kind, []).append(e)
            continue
        found = NONMAGICAL.match(e)
        types = [t for t in re.split(r"[,\s]+|and", found.group(1)) if t in DAMAGE_TYPES] if found else []
        if types:
            out.setdefault(f"{kind}_nonmagical", []).extend(types)
            rest = e[found.end():].strip() if found else ""
            if rest:
                notes.append(f"{kind}: {entry}")  # silvered or adamantine weapons get through: the GM's call
        else:
            notes.append(f"{kind}: {entry}")


def _attack(action: dict[str, Any]) -> dict[str, Any] | None:
    damage = []
    for d in action.get("damage") or []:  # a versatile weapon's choice: the first (one-handed) damage
        damage += d["from"]["options"][:1] if "from" in d else [d]
    parts = [d for d in damage if "damage_dice" in d and "damage_type" in d]
    if "attack_bonus" not in action or not parts:
        return None
    desc = action.get("desc", "")
    reach = re.search(r"(reach \d+ ft\.|range \d+(?:/\d+)? ft\.)", desc)
    out: dict[str, Any] = {"name": action["name"], "bonus": action["attack_bonus"],
                           "damage": parts[0]["damage_dice"].replace(" ", ""),
                           "type": parts[0]["damage_type"]["index"]}
    if reach:
        out["reach"] = reach.group(1).replace("reach ", "").replace("range ", "range ")
    if len(parts) > 1 and " plus " in desc:
        out["plus"] = f"{parts[1]['damage_dice'].replace(' ', '')} {parts[1]['damage_type']['index']}"
    rider = _rider(desc)
    if rider:
        out["rider"] = rider
    return out


CONDITIONS = ("blinded", "charmed", "deafened", "frightened", "grappled", "incapacitated", "invisible", "paralyzed",
              "petrified", "poisoned", "prone", "restrained", "stunned", "unconscious")


def _rider(desc: str) -> str:
    """What a hit also does, said short: "DC 11 STR save or prone", "DC 15 CON save or 7d6 poison (half on a save)"."""
    found = re.search(r"DC (\d+) (\w+) saving throw", desc)
    if not found:
        return ""
    after = desc[found.end():]
    said = f"DC {found.group(1)} {found.group(2)[:3].upper()} save"
    hurt = re.match(r", taking \d+ \((\d+d\d+(?: [+-] \d+)?)\) (\w+) damage", after)
    if hurt:
        said += f" or {hurt.group(1).replace(' ', '')} {hurt.group(2)}" + (" (half on a save)" if "half as much" in after[:200] else "")
        return said
    sentence = after.split(".")[0].lower()
    held = [c for c in CONDITIONS if c in sentence or (c == "prone" and "knocked prone" in sentence)]
    if "grappled" in sentence or "grapple" in sentence:
        held = held or ["grappled"]
    return said + (f" or {' and '.join(held)}" if held else " or a further effect")


def _usage(action: dict[str, Any]) -> str | None:
    usage = action.get("usage") or {}
    if usage.get("type") == "recharge on roll":
        low = usage.get("min_value", 6)
        return f"recharge {low}-6" if low < 6 else "recharge 6"
    if usage.get("type") == "per day":
        return f"{usage.get('times', 1)}/day"
    if usage.get("type") == "recharge after rest":
        return "once per rest"
    return None


def _special(action: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": action["name"]}
    dc = action.get("dc")
    if dc:
        out["save"] = ABILITY[dc["dc_type"]["index"]]
        out["dc"] = dc["dc_value"]
        damage = [d for d in action.get("damage") or [] if "damage_dice" in d and "damage_type" in d]
        if damage:
            out["damage"] = damage[0]["damage_dice"].replace(" ", "")
            out["type"] = damage[0]["damage_type"]["index"]
            out["half"] = "half as much" in action.get("desc", "")
    area = re.search(r"\d+-foot(?:-radius)? (?:cone|line|radius|cube|sphere)", action.get("desc", ""))
    if area:
        out["area"] = area.group(0)
    usage = _usage(action)
    if usage:
        out["use"] = usage
    return out


def _steps(wanted: list[dict[str, Any]]) -> list[dict[str, int | str]]:
    return [{a["action_name"]: int(a["count"]) if str(a.get("count", 1)).isdigit() else str(a["count"]).lower()}
            for a in wanted]


def _multiattack(action: dict[str, Any]) -> list[list[dict[str, int | str]]]:
    """The attacks a multiattack makes: one plan, or several to choose from (three melee, or two ranged)."""
    if action.get("multiattack_type") == "actions" and action.get("actions"):
        return [_steps(action["actions"])]
    options = ((action.get("action_options") or {}).get("from") or {}).get("options") or []
    plans = []
    for option in options:
        items = option.get("items") if option.get("option_type") == "multiple" else [option]
        if items and all("action_name" in i for i in items):
            plans.append(_steps(items))
    return plans


# Where the JSON differs from the SRD 5.1 (checked against its stat blocks): fixed here so the data loads clean.
ERRATA: dict[str, dict[str, Any]] = {
    "cult-fanatic": {"hit_points": 33},  # 6d8 + 6
}


def convert(monster: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    monster = {**monster, **ERRATA.get(monster["index"], {})}
    ac = monster["armor_class"][0]
    speed = {k: _feet(v) for k, v in monster["speed"].items() if isinstance(v, str) and _feet(v)}
    if monster["speed"].get("hover"):
        speed["hover"] = 1
    out: dict[str, Any] = {
        "name": monster["name"], "size": monster["size"].lower(), "type": monster["type"].lower(),
    }
    if monster.get("subtype"):
        out["tags"] = monster["subtype"]
    out["alignment"] = monster["alignment"]
    out["ac"] = ac["value"]
    if ac.get("armor"):
        out["armor"] = ", ".join(a["name"].lower() for a in ac["armor"])
    out.update({"hp": monster["hit_points"], "hit_dice": monster["hit_dice"], "speed": speed,
                "scores": [monster[a] for a in ABILITY.values()]})
    saves = {ABILITY[p["proficiency"]["index"].rsplit("-", 1)[1]]: p["value"]
             for p in monster["proficiencies"] if p["proficiency"]["index"].startswith("saving-throw-")}
    skills = {p["proficiency"]["index"].removeprefix("skill-"): p["value"]
              for p in monster["proficiencies"] if p["proficiency"]["index"].startswith("skill-")}
    if saves:
        out["saves"] = saves
    if skills:
        out["skills"] = skills
    defences: dict[str, Any] = {}
    notes: list[str] = []
    _defences(monster["damage_resistances"], "resist", defences, notes)
    _defences(monster["damage_immunities"], "immune", defences, notes)
    _defences(monster["damage_vulnerabilities"], "vulnerable", defences, notes)
    out.update(defences)
    if notes:
        out["defence_notes"] = notes
    if monster["condition_immunities"]:
        out["condition_immunities"] = [c["index"] for c in monster["condition_immunities"]]
    senses = {k: (_feet(v) if isinstance(v, str) else v) for k, v in monster["senses"].items()}
    out["senses"] = senses
    if monster.get("languages"):
        out["languages"] = monster["languages"]
    out["cr"] = _cr(monster["challenge_rating"])
    # XP follows from the challenge rating (the JSON has a few slips: a CR 1 wyrmling at 100 XP); CR 0 is 0 or 10.
    out["xp"] = monster["xp"] if out["cr"] == "0" else XP_BY_CR[out["cr"]]
    traits = [s["name"] for s in monster.get("special_abilities", [])]
    if traits:
        out["traits"] = traits
    attacks, specials = [], []
    for action in monster.get("actions", []):
        if action["name"] == "Multiattack":
            plans = _multiattack(action)
            if plans:
                out["multiattack"] = plans[0]
            if len(plans) > 1:
                out["multiattack_or"] = plans[1:]
            continue
        found = _attack(action)
        if found is not None:
            attacks.append(found)
        else:
            specials.append(_special(action))
    if attacks:
        out["attacks"] = attacks
    if specials:
        out["specials"] = specials
    if monster.get("reactions"):
        out["reactions"] = [r["name"] for r in monster["reactions"]]
    if monster.get("legendary_actions"):
        out["legendary"] = [a["name"] for a in monster["legendary_actions"]]
    return monster["index"], out


class _Dumper(yaml.SafeDumper):
    pass


def _flow(dumper: yaml.SafeDumper, data: dict | list) -> yaml.Node:
    flat = all(not isinstance(v, (dict, list)) for v in (data.values() if isinstance(data, dict) else data))
    if isinstance(data, dict):
        return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=flat)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Dumper.add_representer(dict, _flow)
_Dumper.add_representer(list, _flow)


def dump(monsters: list[dict[str, Any]]) -> str:
    body = dict(convert(m) for m in monsters)
    head = ("# The SRD 5.1's creatures (CC-BY-4.0, Wizards of the Coast: https://dnd.wizards.com/resources/"
            "systems-reference-document),\n# numbers and names only, made by engine/rules/srd_import.py "
            "from the 5e-bits/5e-database JSON (MIT).\n")
    return head + yaml.dump(body, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m engine.rules.srd_import 5e-SRD-Monsters.json > engine/rules/data/monsters.yaml")
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(dump(json.load(f)))
