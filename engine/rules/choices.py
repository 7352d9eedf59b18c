"""Choices a class makes at creation or as it rises (SRD 5.1, CC-BY-4.0): the Fighting Style (a fighter's at 1st
level, a paladin's and a ranger's at 2nd) and Expertise (a rogue's two skills at 1st and two more at 6th, a bard's
at 3rd and 10th), each the player's pick (`Character.fighting_style`, `Character.expertise`) or, when none was made,
the class's usual one: the style its features name, the first skills it is proficient in."""

from __future__ import annotations

from ..errors import BadInput
from ..state import Character

FIGHTING_STYLES = {
    "archery": "+2 to attack rolls with ranged weapons",
    "defense": "+1 AC while wearing armour",
    "dueling": "+2 damage with a melee weapon in one hand (not a two-handed one)",
    "great weapon fighting": "damage dice of 1 or 2 rerolled once with a two-handed or versatile melee weapon",
    "protection": "a reaction imposes disadvantage on an attack against an ally beside you (with a shield; the GM "
                  "plays it)",
    "two-weapon fighting": "the off hand's attack adds its ability modifier to the damage",
}
STYLES_OF = {"fighter": (1, tuple(FIGHTING_STYLES), "defense"),
             "paladin": (2, ("defense", "dueling", "great weapon fighting", "protection"), "defense"),
             "ranger": (2, ("archery", "defense", "dueling", "two-weapon fighting"), "archery")}


def expertise_count(class_name: str, level: int) -> int:
    if class_name == "rogue":
        return 4 if level >= 6 else 2
    if class_name == "bard":
        return 4 if level >= 10 else 2 if level >= 3 else 0
    return 0


def style_of(ch: Character) -> str | None:
    """The character's fighting style, once its class has one: the one chosen, else the class's usual."""
    found = STYLES_OF.get(ch.char_class)
    if found is None or ch.level < found[0]:
        return None
    return ch.fighting_style if ch.fighting_style in found[1] else found[2]


def expertise_of(ch: Character, proficient: list[str]) -> list[str]:
    """The skills the character has Expertise in (double proficiency): those chosen, then the first of its
    `proficient` skills, until the class's count at this level is reached."""
    count = expertise_count(ch.char_class, ch.level)
    if not count:
        return []
    chosen = [s for s in ch.expertise if s in proficient]
    return (chosen + [s for s in proficient if s not in chosen])[:count]


def check_choices(class_name: str, level: int, skills: list[str], expertise: list[str] | None,
                  style: str | None) -> tuple[list[str], str | None]:
    """The player's picks at creation, checked: expertise in skills the character is proficient in, as many as the
    class gives; a fighting style the class offers. BadInput says what is allowed."""
    picked: list[str] = []
    if expertise:
        count = expertise_count(class_name, level)
        if not count:
            raise BadInput(f"A level-{level} {class_name} has no Expertise to choose.")
        picked = [" ".join(s.lower().split()) for s in expertise if s.strip()]
        wrong = [s for s in picked if s not in skills]
        if wrong:
            raise BadInput(f"Expertise needs a skill you are proficient in; not {', '.join(wrong)} (yours: "
                           f"{', '.join(skills)}).")
        if len(set(picked)) != len(picked) or len(picked) > count:
            raise BadInput(f"A level-{level} {class_name} has Expertise in {count} different skills.")
    chosen = None
    if style:
        key = " ".join(style.lower().replace("-", " ").split()).replace("defence", "defense")
        found = STYLES_OF.get(class_name)
        if found is None or level < found[0]:
            raise BadInput(f"A level-{level} {class_name} has no Fighting Style to choose.")
        if key not in found[1]:
            raise BadInput(f"A {class_name}'s fighting styles: {', '.join(found[1])}.")
        chosen = key
    return picked, chosen


__all__ = ["FIGHTING_STYLES", "STYLES_OF", "check_choices", "expertise_count", "expertise_of", "style_of"]
