"""Role words and epithets resolve to the names the lore is written under, from the game's own people and places."""

from __future__ import annotations

from engine.content import find_adventure
from engine.entities import NPC
from engine.lore.retrieval import query_for, resolved
from engine.lore.roles import resolve
from tests.conftest import CORPUS


def test_role_words_find_the_person_or_place_they_mean():
    saltmere = find_adventure(CORPUS, "saltmere-lantern").new_game(seed=1)
    assert resolve(saltmere, "How old is the innkeeper?") == ["Odile Farrow"]  # "keeper of the Brine Cup", a tavern
    assert resolve(saltmere, "What happened to the harbormaster's husband?") == ["Ysolde Marrick"]
    assert resolve(saltmere, "What does the shopkeeper sell?") == ["Pell Harrow"]  # keeps the chandlery's shop
    assert resolve(saltmere, "Did the tavern owner ever have kids?") == ["Odile Farrow", "The Brine Cup"]
    assert resolve(saltmere, "Where is the pub?") == ["The Brine Cup"]
    # Unclear, general, already named, or a name that only looks like a role: nothing added.
    assert resolve(saltmere, "What is the Widow's Step?") == []
    assert resolve(saltmere, "Why are all the lighthouses painted red?") == []
    assert resolve(saltmere, "Is Odile Farrow the innkeeper?") == []
    assert resolve(saltmere, "I swing my sword") == []
    barrow = find_adventure(CORPUS, "ashen-thane").new_game(seed=1)
    assert resolve(barrow, "How old is the innkeeper?") == ["Hob Tallow"]  # another adventure, the same words
    assert resolve(barrow, "Does the reeve pay well?") == ["Maud Greaves"]
    assert resolve(barrow, "Who is the grave robber?") == ["Cadoc Vane"]
    assert resolve(barrow, "What does the shepherd know?") == ["Old Ketter"]
    assert resolved(barrow, "Find the innkeeper") == "Find the innkeeper (Hob Tallow)"
    assert query_for(barrow, "Find the innkeeper", None).startswith("Find the innkeeper (Hob Tallow)\nHollin's Cross")


def test_people_made_in_play_and_the_scene_decide():
    state = find_adventure(CORPUS, "saltmere-lantern").new_game(seed=1)
    state.npcs["gil-marsh"] = NPC(id="gil-marsh", name="Gil Marsh", role="innkeeper of the Gull", persona="A stooped man.",
                                  location="saltmere-quay")
    assert resolve(state, "How old is the innkeeper?") == ["Gil Marsh"]  # two innkeepers: the one here
    state.npcs["gil-marsh"].location = "harrow-chandlery"
    assert resolve(state, "How old is the innkeeper?") == []  # two, neither here: no guess
