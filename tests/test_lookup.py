"""/lookup: the rules' entries (spells, weapons and armour, conditions) and the creatures of the game being
played, with the nearest names offered when one is not found."""

from __future__ import annotations

import pytest
import yaml

from engine import BadInput
from engine.lookup import creatures, lookup, names


def test_entries_come_from_the_rules_the_engine_plays_by(state):
    fireball = lookup("spell", "FIREBALL")
    assert fireball.startswith("**Fireball** — 3rd-level evocation") and "Damage 8d6 fire (+1d6 a slot level higher)" in fireball
    assert "Dexterity saving throw, half damage on a success." in fireball and "Area: 20-foot sphere" in fireball
    assert lookup("item", "chain mail").endswith("AC 16 (no DEX); needs STR 13 (else 10 ft slower); disadvantage on Stealth")
    assert "Damage 1d8 slashing (1d10 in two hands)" in lookup("item", "longsword")
    assert lookup("item", "shield").endswith("AC +2")
    assert "attacks against it have advantage within 5 feet" in lookup("condition", "Prone")
    smuggler = lookup("monster", "gray oar smuggler", state)
    assert "(CR 1/8)" in smuggler and "AC 12, HP 11" in smuggler and "Rusty cutlass +3 to hit" in smuggler
    assert "Corran Vey" in names("monster", state)  # a person of the adventure with a stat block
    potion = lookup("item", "Healing Potion", state)  # an item of this adventure, by name or id
    assert potion.startswith("**healing potion** — 50 gp") and lookup("item", "potion-of-healing", state) == potion
    with pytest.raises(BadInput, match="No spell called 'firebal'. Did you mean Fireball"):
        lookup("spell", "firebal")
    with pytest.raises(BadInput, match="No condition called 'sleepy'"):
        lookup("condition", "sleepy")
    goblin = lookup("monster", "goblins", None)  # the SRD's, without a game too; a plural finds it
    assert goblin.startswith("**Goblin** (SRD)\nsmall humanoid (goblinoid)") and "AC 15 (leather armor, shield), HP 7 (2d6)" in goblin
    assert "Scimitar +4 to hit, 5 ft., 1d6+2 slashing" in goblin and "Nimble Escape (can Disengage or Hide" in goblin
    with pytest.raises(BadInput, match="No creature in this game or the SRD called 'owlbaer'. Did you mean Owlbear"):
        lookup("monster", "owlbaer", state)
    assert names("monster", state)[:2] == sorted(creatures(state))[:2] and "Adult Red Dragon" in names("monster", state)
    with pytest.raises(BadInput, match="not something to look up"):
        lookup("feat", "alert")


def test_lookup_at_the_keyboard(tmp_path, capsys):
    from bot.cli import main

    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Aria", "class": "fighter"}, "steps": [
        {"say": "/lookup spell fire bolt"}, {"say": "/lookup condition poisoned"}, {"say": "/lookup monster krakn"},
        {"say": "/lookup"}]}))
    assert main(["play", "--db", str(tmp_path / "t.db"), "--script", str(script)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Fire Bolt — cantrip evocation" in out and "**" not in out
    assert "Disadvantage on attack rolls and ability checks." in out
    assert "No creature in this game or the SRD called 'krakn'. Did you mean Kraken" in out and "Usage: /lookup spell fire bolt" in out
