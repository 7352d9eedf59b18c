"""The adventure format's reference page stays true: it names every field the models accept, and its example
passes the check."""

from __future__ import annotations

import re
from pathlib import Path

from engine.content import Adventure, check_adventure
from engine.basics import Abilities, Attack, Currency, Price
from engine.entities import (NPC, Encounter, EnemyTemplate, Exit, ItemInfo, Location, Loot, LootItem, Objective, PersonaCard, Quest, Secret, Shop, ShopItem)

DOC = Path(__file__).resolve().parent.parent / "docs" / "adventure-format.md"


def test_every_field_of_every_adventure_model_is_documented():
    text = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z_]+)`", text))
    for model in (Adventure, Location, Secret, Exit, NPC, PersonaCard, Quest, Objective, Encounter, EnemyTemplate,
                  Abilities, Attack, ItemInfo, Shop, ShopItem, Loot, LootItem, Currency, Price):
        missing = set(model.model_fields) - documented
        assert not missing, f"{model.__name__}: {sorted(missing)} not in {DOC.name}"


def test_every_example_is_a_good_adventure(tmp_path):
    examples = [block.split("```", 1)[0] for block in DOC.read_text(encoding="utf-8").split("```yaml\n")[1:]]
    assert len(examples) == 2  # the minimal one, and the one with a shop, loot, DCs and stat blocks
    for n, example in enumerate(examples):
        path = tmp_path / f"adventure{n}.yaml"
        path.write_text(example, encoding="utf-8")
        assert check_adventure(path) == [], f"example {n + 1}"
