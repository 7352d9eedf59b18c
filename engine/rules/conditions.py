"""Conditions that change the numbers (SRD 5.1 appendix, CC-BY-4.0): who attacks with advantage or disadvantage,
who cannot act, which saves fail without a roll, and the melee hits that become critical.

Conditions are the words in a creature's `conditions` list (a character, an NPC, a combatant), as the agents set
them ("poisoned", "prone", …); exhaustion is "exhaustion" (its first level) to "exhaustion 6", each level adding its
effect to the ones before. Advantage and disadvantage from any number
of sources cancel to a plain roll, as the SRD has it."""

from __future__ import annotations

import re
from typing import Iterable, Literal

Mode = Literal["advantage", "disadvantage"] | None

INCAPACITATED = {"incapacitated", "paralyzed", "paralysed", "petrified", "stunned", "unconscious", "dead", "defeated"}
# Attacking while one of these: disadvantage (prone, poisoned, blinded, restrained, frightened) or advantage
ATTACKER_DIS = {"blinded", "frightened", "poisoned", "prone", "restrained"}
ATTACKER_ADV = {"invisible"}
# Being attacked while one of these: advantage for the attacker (prone only within 5 feet; beyond, disadvantage)
TARGET_ADV = {"blinded", "paralyzed", "paralysed", "petrified", "restrained", "stunned", "unconscious"}
TARGET_DIS = {"invisible"}
CHECK_DIS = {"frightened", "poisoned"}  # disadvantage on ability checks (and exhaustion, at any level)
_EXHAUSTION = re.compile(r"^exhaustion(?: ([1-6]))?$")


def exhaustion(conditions: Iterable[str]) -> int:
    """The level of exhaustion among the conditions ("exhaustion" is the first, "exhaustion 3" the third; 0: none)."""
    levels = [int(m.group(1) or 1) for c in conditions if (m := _EXHAUSTION.match(c.strip().lower()))]
    return max(levels, default=0)


def exhaustion_word(level: int) -> str:
    return "exhaustion" if level == 1 else f"exhaustion {level}"


def _tired(conditions: Iterable[str], at_least: int) -> list[str]:
    level = exhaustion(conditions)
    return [exhaustion_word(level)] if level >= at_least else []
AUTO_FAIL = {"paralyzed", "paralysed", "petrified", "stunned", "unconscious"}  # fail STR and DEX saves


def _has(conditions: Iterable[str], names: set[str]) -> list[str]:
    return sorted({c.strip().lower() for c in conditions} & names)


def combine(asked: Mode, advantages: list[str], disadvantages: list[str]) -> tuple[Mode, str]:
    """The roll's mode from what was asked and what the conditions give, and the reason said ("" for none)."""
    adv = bool(advantages) or asked == "advantage"
    dis = bool(disadvantages) or asked == "disadvantage"
    why = [f"advantage: {', '.join(advantages)}"] if advantages else []
    why += [f"disadvantage: {', '.join(disadvantages)}"] if disadvantages else []
    mode: Mode = None if adv and dis else "advantage" if adv else "disadvantage" if dis else None
    return mode, ("; ".join(why) + (" (they cancel)" if adv and dis else "")) if why else ""


def attack_mode(asked: Mode, attacker: Iterable[str], target: Iterable[str], melee: bool,
                extra_dis: Iterable[str] = (), extra_adv: Iterable[str] = ()) -> tuple[Mode, str]:
    """An attack roll's mode from the attacker's and the target's conditions (and `extra_dis`, `extra_adv`: other
    reasons, such as a heavy weapon in Small hands or a target outlined by Faerie Fire)."""
    attacker, target = list(attacker), list(target)
    adv = [f"attacker {c}" for c in _has(attacker, ATTACKER_ADV)] + [f"target {c}" for c in _has(target, TARGET_ADV)]
    adv += list(extra_adv)
    dis = [f"attacker {c}" for c in _has(attacker, ATTACKER_DIS)] + [f"target {c}" for c in _has(target, TARGET_DIS)]
    dis += [f"attacker {c}" for c in _tired(attacker, 3)] + list(extra_dis)
    if "prone" in {c.lower() for c in target}:
        (adv if melee else dis).append("target prone")
    return combine(asked, adv, dis)


def melee_crit(target: Iterable[str]) -> bool:
    """A melee hit on a paralysed or unconscious creature (within 5 feet) is a critical hit."""
    return bool(_has(target, {"paralyzed", "paralysed", "unconscious"}))


def cannot_act(conditions: Iterable[str]) -> str | None:
    """The condition that keeps a creature from acting (attacking, casting), or None."""
    found = _has(conditions, INCAPACITATED)
    return found[0] if found else None


def check_mode(asked: Mode, conditions: Iterable[str], advantages: Iterable[str] = ()) -> tuple[Mode, str]:
    """A check's mode from the holder's conditions (and `advantages`: effects that give one, such as Rage's)."""
    conditions = list(conditions)
    return combine(asked, list(advantages), _has(conditions, CHECK_DIS) + _tired(conditions, 1))


def save_mode(asked: Mode, conditions: Iterable[str], ability: str, advantages: Iterable[str] = ()) -> tuple[Mode, str]:
    """A save's mode from the holder's conditions (and `advantages`: spells that give one, such as Haste's)."""
    conditions = list(conditions)
    dis = ["restrained"] if ability == "dexterity" and _has(conditions, {"restrained"}) else []
    return combine(asked, list(advantages), dis + _tired(conditions, 3))


def speed_after(conditions: Iterable[str], speed: int) -> int:
    """Speed as conditions leave it: 0 when grappled, restrained or at exhaustion 5; halved at exhaustion 2."""
    conditions = list(conditions)
    level = exhaustion(conditions)
    if level >= 5 or _has(conditions, {"grappled", "restrained"}):
        return 0
    return speed // 2 if level >= 2 else speed


def hp_maximum(conditions: Iterable[str], maximum: int) -> int:
    """The hit point maximum as exhaustion leaves it: halved from its fourth level."""
    return max(1, maximum // 2) if exhaustion(conditions) >= 4 else maximum


def fails_save(conditions: Iterable[str], ability: str) -> str | None:
    """The condition that makes a STR or DEX save fail without a roll, or None."""
    if ability not in ("strength", "dexterity"):
        return None
    found = _has(conditions, AUTO_FAIL)
    return found[0] if found else None


# What each SRD condition does, in our own words, for /lookup (the numbers above are what the engine applies).
DESCRIPTIONS = {
    "blinded": "Cannot see: fails any check that needs sight. Attacks against it have advantage; its own attacks "
               "have disadvantage.",
    "charmed": "Cannot attack the one who charmed it or target them with harmful magic; the charmer has advantage "
               "on checks to deal with it socially.",
    "deafened": "Cannot hear: fails any check that needs hearing.",
    "exhaustion": "Six levels, each adding to the last: 1 disadvantage on ability checks; 2 speed halved; 3 "
                  "disadvantage on attacks and saves; 4 hit point maximum halved; 5 speed 0; 6 death. A long rest "
                  "removes one level.",
    "frightened": "Disadvantage on checks and attacks while the source of its fear is in sight; cannot willingly "
                  "move closer to it.",
    "grappled": "Speed 0. Ends if the grappler is incapacitated or it is moved out of reach.",
    "incapacitated": "Can take no actions or reactions.",
    "invisible": "Cannot be seen without magic or a special sense. Its attacks have advantage; attacks against it "
                 "have disadvantage.",
    "paralyzed": "Incapacitated, cannot move or speak. Fails Strength and Dexterity saves; attacks against it have "
                 "advantage, and any hit from within 5 feet is a critical hit.",
    "petrified": "Turned to stone: incapacitated, unaware, weight tenfold, resistant to all damage, immune to "
                 "poison and disease. Fails Strength and Dexterity saves; attacks against it have advantage.",
    "poisoned": "Disadvantage on attack rolls and ability checks.",
    "prone": "Can only crawl (standing up costs half its speed). Its attacks have disadvantage; attacks against it "
             "have advantage within 5 feet and disadvantage from farther away.",
    "restrained": "Speed 0. Its attacks and its Dexterity saves have disadvantage; attacks against it have "
                  "advantage.",
    "stunned": "Incapacitated, cannot move, speaks only falteringly. Fails Strength and Dexterity saves; attacks "
               "against it have advantage.",
    "unconscious": "Incapacitated, cannot move or speak, unaware, drops what it holds and falls prone. Fails "
                   "Strength and Dexterity saves; attacks against it have advantage, and any hit from within 5 "
                   "feet is a critical hit.",
}
