"""5e rules written from the SRD 5.1 (CC-BY-4.0): the arithmetic of checks and saves, and the data they stand on."""

from .checks import (CLASS_SAVES, CLASS_SKILLS, HEALING_POTIONS, SHORT, SKILLS, Check, Mode, ability_of, check, proficiencies,
                     proficiency_bonus, saves_of, skills_of, title)

__all__ = ["CLASS_SAVES", "CLASS_SKILLS", "HEALING_POTIONS", "SHORT", "SKILLS", "Check", "Mode", "ability_of", "check", "proficiencies",
           "proficiency_bonus", "saves_of", "skills_of", "title"]
