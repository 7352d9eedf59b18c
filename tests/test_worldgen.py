"""A new world from a premise: two answers held to schemas (the second's places and creatures as enums), joined into
an adventure the checker accepts, one repair round for what does not fit, saved in the corpus, and played."""

from __future__ import annotations

import json
import random
import shutil

import pytest
import yaml

from engine import Deps, Engine, ScriptedModel, Store, load_config
from engine.basics import AgentType
from engine.content import check_adventure, find_adventure
from engine.worldgen import WorldError
from tests.conftest import CHANNEL, CORPUS, store_at

OUTLINE = {
    "title": "The Hollow Crown Mine",
    "summary": "Miners vanish below a mountain town; something old woke in the deep seam.",
    "intro": "Snow hisses on the slate roofs of Gallowmere as you ride in under the pithead wheel, silent for a week.",
    "places": [
        {"name": "Gallowmere Square", "description": "A muddy square under the pithead wheel, ringed by miners' huts.",
         "secret": "Fresh claw marks on the well cover.", "skill": "perception"},
        {"name": "The Lamp and Pick", "description": "A smoky alehouse where the miners drink in silence."},
        {"name": "Pithead", "description": "The winding house and the cage that drops into the dark.",
         "secret": "The cage's brake was cut.", "skill": "investigation"},
        {"name": "The Deep Seam", "description": "A cold gallery where the walls hum and the lamps burn blue."},
    ],
}
CAST = {
    "people": [
        {"name": "Marda Coyle", "role": "mine foreman", "place": "Gallowmere Square", "attitude": "wary",
         "persona": "A hard woman who counts her miners every dawn and has come up short four days running.",
         "secret": "She sealed the deep seam herself and lied about it."},
        {"name": "Tobin Reek", "role": "alehouse keeper", "place": "The Lamp and Pick", "attitude": "friendly",
         "persona": "A jolly man who waters the ale and hears everything.", "secret": "He sells the miners' lamps back to them."},
        {"name": "Ysa Brand", "role": "smith", "place": "Gallowmere Square", "attitude": "neutral",
         "persona": "A quiet smith who forges the picks.", "secret": "She heard singing from the seam."},
        {"name": "Old Pell", "role": "retired miner", "place": "Pithead", "attitude": "wary",
         "persona": "A coughing old man who will not go near the cage.", "secret": "He cut the brake to stop the descents."},
    ],
    "quest": {"title": "The Silent Wheel", "giver": "Marda Coyle", "description": "Find the missing miners.",
              "objectives": ["Go down the pit", "Find what sings in the deep seam"], "reward": "60 gp"},
    "fights": [{"name": "Things in the Seam", "place": "The Deep Seam", "foes": [{"monster": "Ghoul", "count": 2}]}],
    "shop": {"name": "Reek's Back Room", "place": "The Lamp and Pick", "keeper": "Tobin Reek",
             "wares": [{"name": "miner's lamp", "price_gp": 2}, {"name": "pick", "price_gp": 2},
                       {"name": "healing draught", "price_gp": 50, "description": "Restores 2d4+2 hit points."}]},
}


@pytest.fixture
async def maker(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    model = ScriptedModel(chunk_size=40)
    async with Store.open(store_at(tmp_path / "w.db")) as store:
        engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), corpus, rng=random.Random(3)))
        yield engine, model, corpus


async def test_a_premise_becomes_a_checked_saved_playable_adventure(maker):
    engine, model, corpus = maker
    model.add(json.dumps(OUTLINE), json.dumps(CAST))
    world = await engine.make_world("a haunted mining town in the mountains")
    assert world.id == "the-hollow-crown-mine" and len(world.locations) == 4 and len(world.npcs) == 4
    path = corpus / "adventures" / world.id / "adventure.yaml"
    assert check_adventure(path) == [] and path.read_text().startswith("# Made by Lorekeeper's world-builder")
    # Every place reachable from the start, every way both ways; each person's secret is theirs.
    ways = {loc.id: {e.to for e in loc.exits} for loc in world.locations}
    assert all(b in ways and a in ways[b] for a, tos in ways.items() for b in tos)
    marda = next(n for n in world.npcs if n.name == "Marda Coyle")
    assert marda.role == "mine foreman" and marda.knows_secrets == ["marda-coyle-secret"]
    assert world.quests[0].giver == "marda-coyle" and [o.text for o in world.quests[0].objectives][0] == "Go down the pit"
    ghouls = world.encounters[0].enemies[0]
    assert (ghouls.monster, ghouls.count, ghouls.hp) == ("ghoul", 2, 22)
    assert world.shops[0].keeper == "tobin-reek" and len(world.shops[0].stock) == 3
    # The two requests were held to schemas: the second lists the first's places and the SRD's creatures only.
    first, second = model.requests
    assert first.agent is AgentType.WORLDBUILDER and first.schema["properties"]["places"]["minItems"] == 4
    people = second.schema["properties"]["people"]["items"]["properties"]
    assert people["place"]["enum"] == [p["name"] for p in OUTLINE["places"]]
    foes = second.schema["properties"]["fights"]["items"]["properties"]["foes"]["items"]["properties"]["monster"]["enum"]
    assert "Ghoul" in foes and "Adult Red Dragon" not in foes
    state, intro = await engine.start_game(CHANNEL, adventure=world.id)
    assert state.current_location == "gallowmere-square" and intro == OUTLINE["intro"]
    assert find_adventure(corpus, world.id).title == "The Hollow Crown Mine"


async def test_what_does_not_fit_is_sent_back_once(maker):
    engine, model, corpus = maker
    wrong = json.loads(json.dumps(CAST))
    wrong["fights"][0]["place"] = "The Moon"  # a place that is none of them (a server that ignored the enum)
    model.add(json.dumps(OUTLINE), json.dumps(wrong), json.dumps(CAST))
    world = await engine.make_world("a haunted mining town")
    assert world.encounters[0].location == "the-deep-seam"
    repair = model.requests[-1].messages[-1].content
    assert "the fight 'Things in the Seam' is at 'The Moon', which is none of the places" in repair
    # Twice wrong: refused in a sentence, nothing saved.
    model.add(json.dumps(OUTLINE), json.dumps(wrong), json.dumps(wrong))
    with pytest.raises(WorldError, match="does not hold together .*The Moon.* Nothing was saved"):
        await engine.make_world("another haunted mining town")
    assert sorted(p.name for p in (corpus / "adventures").iterdir()) == ["ashen-thane", "saltmere-lantern",
                                                                         "the-hollow-crown-mine"]


async def test_unreadable_answers_and_bad_premises_are_refused(maker):
    engine, model, corpus = maker
    model.add("Once upon a time there was a mine.", '{"title": "x"}')
    with pytest.raises(WorldError, match="could not write the places that fits"):
        await engine.make_world("a haunted mining town")
    assert "places: Field required" in model.requests[-1].messages[-1].content or \
        "no JSON object" in model.requests[-1].messages[-1].content
    # A giver who is none of the people makes the first one the giver; a keeper who is none joins them.
    loose = json.loads(json.dumps(CAST))
    loose["quest"]["giver"], loose["shop"]["keeper"] = "Mayor Nobody", "Old Bessa"
    loose["people"].append(dict(loose["people"][1], role="twin"))  # a second Tobin Reek: left out
    twin = json.loads(json.dumps(OUTLINE))
    twin["places"].append({"name": "Gallowmere Square", "description": "The square again, by night."})  # one name twice
    model.add(json.dumps(twin), json.dumps(loose))
    world = await engine.make_world("a twice-haunted mining town")
    assert world.quests[0].giver == "marda-coyle" and [loc.id for loc in world.locations][::4] == \
        ["gallowmere-square", "gallowmere-square-2"]
    assert [n.name for n in world.npcs] == ["Marda Coyle", "Tobin Reek", "Ysa Brand", "Old Pell", "Old Bessa"]
    assert world.locations[4].name == "Gallowmere Square (2)"
    bessa = next(n for n in world.npcs if n.name == "Old Bessa")
    assert world.shops[0].keeper == bessa.id and bessa.role == "shopkeeper"
    with pytest.raises(WorldError, match="a sentence of 3 to 300 characters"):
        await engine.make_world("x")
    assert not (corpus / "adventures" / "x").exists()


def test_play_premise_at_the_keyboard(tmp_path, capsys, monkeypatch):
    from bot.cli import main

    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    monkeypatch.setenv("LOREKEEPER_CORPUS", str(corpus))
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"world": [json.dumps(OUTLINE), json.dumps(CAST)],
                                      "character": {"name": "Aria", "class": "fighter"},
                                      "steps": [{"say": "I look at the wheel", "replies": ["It does not turn."]}]}))
    code = main(["play", "--db", str(tmp_path / "t.db"), "--script", str(script), "--premise", "a haunted mining town"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "A new world: The Hollow Crown Mine, saved in corpus/adventures/the-hollow-crown-mine/" in captured.err
    assert "=== The Hollow Crown Mine ===" in captured.out and "It does not turn." in captured.out
    code = main(["play", "--db", str(tmp_path / "t.db"), "--script", str(script), "--premise", "x", "--adventure", "y"])
    assert code != 0 and "Give --adventure or --premise, not both." in capsys.readouterr().err
