"""The adventure format's reference page stays true: it names every field the models accept, and its example
passes the check."""

from __future__ import annotations

import re
from pathlib import Path

from engine.content import Adventure, check_adventure
from engine.state import NPC, EnemyTemplate, Encounter, Exit, Location, Objective, PersonaCard, Quest, Secret

DOC = Path(__file__).resolve().parent.parent / "docs" / "adventure-format.md"


def test_every_field_of_every_adventure_model_is_documented():
    text = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z_]+)`", text))
    for model in (Adventure, Location, Secret, Exit, NPC, PersonaCard, Quest, Objective, Encounter, EnemyTemplate):
        missing = set(model.model_fields) - documented
        assert not missing, f"{model.__name__}: {sorted(missing)} not in {DOC.name}"


def test_the_minimal_example_is_a_good_adventure(tmp_path):
    example = DOC.read_text(encoding="utf-8").split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "adventure.yaml"
    path.write_text(example, encoding="utf-8")
    assert check_adventure(path) == []
