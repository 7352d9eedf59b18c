"""Adventure files: the shipped one loads; broken ones are reported precisely."""

from __future__ import annotations

import pytest
import yaml

from engine import ConfigError
from engine.content import check_adventure, find_adventure, list_adventures, load_adventure
from tests.conftest import CORPUS

MINIMAL = {
    "id": "tiny", "title": "Tiny", "intro": "Hi.", "start_location": "a",
    "locations": [{"id": "a", "name": "A", "description": "d", "exits": [{"to": "b"}]},
                  {"id": "b", "name": "B", "description": "d", "secrets": [{"id": "s", "text": "t"}]}],
    "npcs": [{"id": "n", "name": "N", "persona": "p", "location": "a", "knows_secrets": ["s"]}],
    "quests": [{"id": "q", "title": "Q", "giver": "n", "objectives": [{"id": "o", "text": "do"}]}],
    "encounters": [{"id": "e", "name": "E", "location": "b", "enemies": [{"name": "Rat", "hp": 2, "ac": 10}]}],
}


def write(tmp_path, data, folder="tiny"):
    path = tmp_path / "adventures" / folder / "adventure.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_shipped_adventure_meets_the_brief():
    adv = find_adventure(CORPUS, "saltmere-lantern")
    assert len(adv.locations) >= 4 and len(adv.npcs) >= 3 and adv.encounters
    assert any(q.objectives for q in adv.quests)
    assert all(n.persona and n.knows_secrets for n in adv.npcs[:3])
    assert list(list_adventures(CORPUS)) == ["ashen-thane", "saltmere-lantern"]
    assert find_adventure(CORPUS, None).id == "saltmere-lantern"  # the starter (levels 1-2) is the default


def test_the_second_adventure_is_another_kind_with_srd_monsters():
    adv = find_adventure(CORPUS, "ashen-thane")
    assert adv.levels == "3-5" and adv.lowest_level == 3 and adv.world == "sundered-coast"
    assert len(adv.locations) >= 8 and len(adv.encounters) >= 3 and adv.shops and len(adv.npcs) >= 4
    assert not adv.check_references() and check_adventure(CORPUS / "adventures" / "ashen-thane" / "adventure.yaml") == []
    monsters = {t.monster for e in adv.encounters for t in e.enemies}
    assert {"wolf", "gnoll", "skeleton", "ghoul", "wight", "zombie"} <= monsters
    thane = next(t for e in adv.encounters for t in e.enemies if t.name == "The Ashen Thane")
    assert (thane.hp, thane.ac, thane.cr) == (45, 14, "3") and thane.defences.nonmagical_resistances
    state = adv.new_game(seed=1)
    assert state.current_location == "hollins-cross" and "thanes-tomb" in state.locations


def test_minimal_adventure_loads_and_starts(tmp_path):
    adv = load_adventure(write(tmp_path, MINIMAL))
    state = adv.new_game(seed=3)
    assert state.current_location == "a" and state.npcs["n"].location == "a"


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.update(start_location="nowhere"), "start_location 'nowhere'"),
    (lambda d: d["locations"][0]["exits"].append({"to": "zz"}), "exit to unknown location 'zz'"),
    (lambda d: d["locations"][0]["exits"].append({"to": "b", "requires": "key"}), "requires 'key'"),
    (lambda d: d["npcs"][0].update(knows_secrets=["nope"]), "knows unknown secret 'nope'"),
    (lambda d: d["quests"][0].update(giver="ghost"), "unknown npc 'ghost'"),
    (lambda d: d["encounters"][0].update(location="moon"), "unknown location 'moon'"),
    (lambda d: d["locations"].append(dict(d["locations"][0])), "location id 'a' is used twice"),
    (lambda d: d["npcs"][0].update(attitude="grumpy"), "npcs[n].attitude: must be one of 'friendly', 'neutral', "
                                                       "'wary' or 'hostile' (got 'grumpy')"),
    (lambda d: d.update(colour="red"), "colour"),
    (lambda d: d["npcs"][0].update(name="   "), "npcs[n].name: must not be blank"),
    (lambda d: d["npcs"][0].update(name=""), "npcs[n].name: String should have at least 1 character"),
    # a scalar where a list belongs is reported, not a TypeError out of the cross-reference checks
    (lambda d: d["locations"][1].update(secrets=5), "locations[b].secrets: must be a list"),
    (lambda d: d["locations"][0].update(exits=True), "locations[a].exits: must be a list"),
    (lambda d: d["npcs"][0].update(knows_secrets=1.5), "npcs[n].knows_secrets: must be a list"),
    (lambda d: d["encounters"][0].update(npcs=3, loot={"items": 2}), "encounters[e].npcs: must be a list"),
])
def test_broken_adventures_name_the_problem(tmp_path, mutate, message):
    import copy

    data = copy.deepcopy(MINIMAL)
    mutate(data)
    with pytest.raises(ConfigError) as err:
        load_adventure(write(tmp_path, data))
    assert message in err.value.message and "adventure.yaml" in err.value.message


def test_bad_yaml_and_wrong_shapes(tmp_path):
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_adventure(write(tmp_path, "id: [unclosed"))
    with pytest.raises(ConfigError, match=r"mapping \(name: value lines\) at the top level"):
        load_adventure(write(tmp_path, "- just\n- a list\n"))


def test_unknown_adventure_lists_the_available_ones(tmp_path):
    write(tmp_path, MINIMAL)
    with pytest.raises(ConfigError, match="Available: tiny"):
        find_adventure(tmp_path, "other")
    with pytest.raises(ConfigError, match="No adventures found"):
        find_adventure(tmp_path / "empty", None)
    write(tmp_path, MINIMAL, folder="mismatch")
    with pytest.raises(ConfigError, match="declares id 'tiny'"):
        find_adventure(tmp_path, "mismatch")


def test_a_config_value_where_a_table_belongs_is_a_clear_error(tmp_path):
    from engine.config import load_config

    path = tmp_path / "bad.toml"
    path.write_text("agents = 5\n")
    with pytest.raises(ConfigError, match=r"\[agents\] must be a table"):
        load_config(path)
    path.write_text("[agents.bard]\nmodel = 'x'\n")
    with pytest.raises(ConfigError, match="unknown agent"):
        load_config(path)
    path.write_text("[turn]\ntool_quota = 0\n")
    with pytest.raises(ConfigError, match="tool_quota"):
        load_config(path)


def test_an_adventure_is_parsed_once_and_again_when_its_file_changes(tmp_path):
    import shutil

    from engine.content import find_adventure

    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS / "adventures" / "saltmere-lantern", corpus / "adventures" / "saltmere-lantern")
    first = find_adventure(corpus, None)
    assert find_adventure(corpus, None) is first  # unchanged: not parsed again
    path = corpus / "adventures" / "saltmere-lantern" / "adventure.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(first.title, "The Lantern, Relit", 1), encoding="utf-8")
    assert find_adventure(corpus, None).title == "The Lantern, Relit"
    game = first.new_game(1)
    next(iter(game.npcs.values())).hp = 0
    assert next(iter(first.npcs)).hp != 0  # a game's changes never reach the shared adventure


def test_a_check_reports_every_problem_in_one_pass_named_by_ids(tmp_path):
    import copy

    from engine.content import check_adventure

    data = copy.deepcopy(MINIMAL)
    data["npcs"][0].update(atitude="warm", max_hp="lots", location="harbor")
    data["npcs"].append({"name": "Nameless", "persona": "p"})
    data["locations"][0]["exits"].append({"too": "b"})
    data["quests"][0]["giver"] = "nn"
    data["encounters"][0]["enemies"] = []
    assert check_adventure(write(tmp_path, data)) == [
        "locations[a].exits[#2].to: is required but missing",
        "locations[a].exits[#2].too: 'too' is not a field here: did you mean 'to'?",
        "npcs[n].max_hp: must be a whole number (got 'lots')",
        "npcs[n].atitude: 'atitude' is not a field here: did you mean 'attitude'?",
        "npcs[#2].id: is required but missing",
        "encounters[e].enemies: must have at least 1 item",
        "npc 'n' is at unknown location 'harbor'",
        "quest 'q' is given by unknown npc 'nn' (did you mean 'n'?)",
    ]
    [bad_yaml] = check_adventure(write(tmp_path, "id: tiny\ntitle: [unclosed\n", "broken"))
    assert bad_yaml.startswith("line 3, column 1: not valid YAML (") and "']'" in bad_yaml
    assert check_adventure(CORPUS / "adventures" / "saltmere-lantern" / "adventure.yaml") == []


def test_the_check_reports_problems_in_shops_loot_dcs_and_stat_blocks(tmp_path):
    import copy

    from engine.content import check_adventure

    data = copy.deepcopy(MINIMAL)
    data["items"] = [{"id": "rope", "name": "rope", "price": "1 gp"}, {"id": "key", "name": "key"},
                     {"id": "lamp", "name": "lamp", "price": "-5 gp"}, {"id": "gem", "name": "gem", "price": "lots"}]
    data["shops"] = [{"id": "shop", "name": "Shop", "location": "nowhere", "keeper": "n", "haggle": 80,
                      "stock": [{"item": "rope"}, {"item": "rop"}, {"item": "key"}, {"item": "rope", "quantity": -1}]},
                     {"id": "stall", "name": "Stall"}]
    secret = data["locations"][1]["secrets"][0]
    secret.update(dc=31, skill="investigation", loot={"coins": {"gp": 5}, "items": [{"item": "sword"}]})
    data["locations"][0]["exits"][0].update(dc=12, skill="lockpicking")
    enemy = data["encounters"][0]["enemies"][0]
    enemy.update(cr="1/3", actions=[{"name": "Bite", "bonus": 4, "damage": "a lot", "damage_type": "fangs"}])
    data["encounters"][0].update(npcs=["m"], loot={"items": [{"item": "cheese", "quantity": 2}]})
    assert check_adventure(write(tmp_path, data)) == [
        "locations[b].secrets[s].dc: must be at most 30 (got 31)",
        "encounters[e].enemies[#1].actions[#1].damage: must be dice, like 1d6 or 2d8+3 (got 'a lot')",
        "encounters[e].enemies[#1].actions[#1].damage_type: must be one of 'acid', 'bludgeoning', 'cold', 'fire', "
        "'force', 'lightning', 'necrotic', 'piercing', 'poison', 'psychic', 'radiant', 'slashing' or 'thunder' "
        "(got 'fangs')",
        "encounters[e].enemies[#1].cr: must be a challenge rating: 0, 1/8, 1/4, 1/2 or a whole number up to 30 "
        "(got '1/3')",
        "items[lamp].price.amount: must be at least 0 (got -5)",
        "items[gem].price: a price is a whole number and a coin, like '5 gp' or '8 sp' (got 'lots')",
        "shops[shop].stock[#4].quantity: must be at least 0 (got -1)",
        "shops[shop].haggle: must be at most 50 (got 80)",
        "shops[stall]: a shop needs a location, a keeper, or both",
        "encounter 'e' has unknown npc 'm' among its foes",
        "shop 'shop' is at unknown location 'nowhere'",
        "shop 'shop' sells unknown item 'rop' (did you mean 'rope'?)",
        "shop 'shop' sells item 'key' without a price: give it one here or in items",
        "shop 'shop' lists item 'rope' twice",
        "the loot of encounter 'e' names unknown item 'cheese'",
        "the loot of secret 's' names unknown item 'sword'",
        "exit 'a' -> 'b' has skill 'lockpicking', which is neither a skill nor an ability",
        "exit 'a' -> 'b' has a dc but nothing closes it: give it 'requires' (a flag or a secret)",
    ]
