"""The action economy of a turn in a fight (engine/rules/economy.py): one action (the Attack action's attacks with
Extra Attack, one more with Action Surge), one bonus action (a bonus-action spell leaves only a cantrip; the off hand's
light weapon), one reaction a round (an opportunity attack, Shield) back at the start of the turn; through the agents'
tools and the players' commands alike, and shown in the tracker."""

from __future__ import annotations

import pytest

from engine.basics import Item
from engine.characters import make_character
from engine.errors import BadInput, ToolError
from engine.rules import economy
from engine.state import Character, GameState
from engine.tools.attacks import weapon_attack
from engine.tools.class_features import use
from engine.tools.combat import tracker
from engine.tools.spells import cast
from tests.conftest import CHANNEL, call, ctx_for, new_state, turn_of


def join(state: GameState, owner: str, name: str, cls: str, level: int, **update) -> Character:
    ch = make_character(owner, name, cls, level).model_copy(update=update)
    state.characters[owner] = ch
    state.party.player_ids.append(owner)
    return ch


def fight(state: GameState) -> None:
    assert call(ctx_for(state), '<start_combat>{"enemy": [{"name": "Ogre", "hp": 500, "ac": 5}]}</start_combat>').ok


def swing(state: GameState, name: str, **kw) -> str:
    ch = state.find_character(name)
    weapon = kw.pop("weapon", "longsword")
    return weapon_attack(ctx_for(state, "combat"), ch, weapon, "Ogre", **kw)


def test_extra_attack_by_class_and_level():
    assert [economy.attacks_per_action(make_character("u", "F", "fighter", n)) for n in (1, 5, 11, 20)] == [1, 2, 3, 4]
    assert [economy.attacks_per_action(make_character("u", "P", c, 5)) for c in ("paladin", "ranger", "monk",
                                                                                  "barbarian", "rogue", "wizard")] == \
        [2, 2, 2, 2, 1, 1]
    assert economy.spell_cost("1 bonus action") == "bonus action" and economy.spell_cost("1 reaction") == "reaction"
    assert economy.spell_cost("1 action") == "action" and economy.spell_cost("1 minute") == "action"


def test_the_attack_action_gives_extra_attack_and_action_surge_one_more_action():
    state = new_state()
    join(state, "u3", "Vala", "fighter", 5)
    fight(state)
    turn_of(state, "Vala")
    assert "Ogre" in swing(state, "Vala") and "Ogre" in swing(state, "Vala")  # Extra Attack: two in one action
    with pytest.raises(ToolError, match=r"no action left this turn \(the Attack action's 2 attacks are made\)"):
        swing(state, "Vala")
    surge = use(ctx_for(state, actor="u3"), state.find_character("Vala"), "action surge")
    assert "one more action this turn" in surge
    swing(state, "Vala"), swing(state, "Vala")
    with pytest.raises(ToolError, match="no action left"):
        swing(state, "Vala")
    vala = next(p for p in state.combat.order if p.name == "Vala")
    assert economy.summary(vala, state.find_character("Vala")) == \
        "action used (4/4 attacks), bonus action free, reaction free"


def test_off_turn_attacks_are_reactions_once_a_round_back_at_the_start_of_the_turn():
    state = new_state()
    fight(state)
    now = state.combat.current()
    other = next(p for p in state.combat.order if p.faction == "player" and p is not now)
    name = other.name
    weapon = "longsword" if name == "Aria" else "quarterstaff"
    with pytest.raises(ToolError, match=f"not {name}'s: on another's turn {name} attacks only as a reaction"):
        swing(state, name, weapon=weapon)
    assert "(reaction)" in swing(state, name, weapon=weapon, reaction=True)
    with pytest.raises(ToolError, match="used their reaction this round"):
        swing(state, name, weapon=weapon, reaction=True)
    ctx = ctx_for(state, "combat")
    while state.combat.current().name != name:
        call(ctx, "<next_turn/>")
    turn = state.combat.current()
    assert turn.acted == [] and "reaction free" in tracker(state)


def test_two_weapon_fighting_needs_the_attack_action_with_a_light_weapon_and_adds_no_modifier():
    state = new_state()
    rogue = join(state, "u3", "Pip", "rogue", 1)
    rogue.inventory += [Item(name="shortsword"), Item(name="dagger")]
    fight(state)
    turn_of(state, "Pip")
    with pytest.raises(ToolError, match="only after taking the Attack action with a light melee weapon"):
        swing(state, "Pip", weapon="dagger", offhand=True)
    swing(state, "Pip", weapon="shortsword")
    off = swing(state, "Pip", weapon="dagger", offhand=True)
    assert "dagger (off hand, bonus action)" in off and "damage 1d4 → " in off  # DEX +3 is not added
    with pytest.raises(ToolError, match="used this turn's bonus action"):
        swing(state, "Pip", weapon="dagger", offhand=True)


def test_a_bonus_action_spell_leaves_only_a_cantrip_and_shield_is_a_reaction_on_anothers_turn():
    state = new_state()
    iri = join(state, "u3", "Iri", "cleric", 3, spells=["Healing Word", "Bless", "Shield of Faith"])
    wizard = join(state, "u4", "Ilse", "wizard", 3, spells=["Shield", "Magic Missile"])
    fight(state)
    turn_of(state, "Iri")
    told = cast(ctx_for(state, actor="u3"), iri, "healing word", "Aria", None, None)
    assert "(1st-level slot, bonus action)" in told
    with pytest.raises(BadInput, match="cast a bonus-action spell this turn: only a cantrip"):
        cast(ctx_for(state, actor="u3"), iri, "bless", "Aria", None, None)
    assert "Sacred Flame" in cast(ctx_for(state, actor="u3"), iri, "sacred flame", "Ogre", None, None, confirmed=True)
    with pytest.raises(BadInput, match="no action left"):
        cast(ctx_for(state, actor="u3"), iri, "sacred flame", "Ogre", None, None, confirmed=True)
    shield = cast(ctx_for(state, actor="u4"), wizard, "shield", None, None, None)  # on Iri's turn: a reaction
    assert "(1st-level slot, reaction)" in shield
    with pytest.raises(BadInput, match="not Ilse's: on another's turn only a reaction spell"):
        cast(ctx_for(state, actor="u4"), wizard, "magic missile", "Ogre", None, None, confirmed=True)
    with pytest.raises(BadInput, match="used their reaction this round"):
        cast(ctx_for(state, actor="u4"), wizard, "shield", None, None, None)


def test_features_take_their_place_in_the_turn():
    state = new_state()
    join(state, "u3", "Korg", "barbarian", 1)
    fight(state)
    turn_of(state, "Aria")
    with pytest.raises(BadInput, match="not Korg's: Rage waits for theirs"):
        use(ctx_for(state, actor="u3"), state.find_character("Korg"), "rage")
    turn_of(state, "Korg")
    use(ctx_for(state, actor="u3"), state.find_character("Korg"), "rage")  # a bonus action
    korg = next(p for p in state.combat.order if p.name == "Korg")
    assert economy.summary(korg, state.find_character("Korg")) == "action free, bonus action used, reaction free"
    assert "Korg has: action free, bonus action used, reaction free." in tracker(state)
    turn_of(state, "Aria")
    state.characters["u1"].hp = 1
    use(ctx_for(state), state.characters["u1"], "second wind")
    with pytest.raises(ToolError, match="used this turn's bonus action"):
        state.characters["u1"].inventory += [Item(name="dagger"), Item(name="handaxe")]
        swing(state, "Aria", weapon="handaxe")
        swing(state, "Aria", weapon="dagger", offhand=True)


async def test_the_players_commands_keep_the_turn_too(table):
    engine = table.engine
    state = await table.state()
    assert state.characters  # Aria the fighter (u1), Bram the wizard (u2)
    table.model.add('<start_combat>{"enemy": [{"name": "Rat", "hp": 300, "ac": 1}]}</start_combat>', " Rats!")
    await table.turn("We fight the rat.")
    state = await table.state()
    now = state.combat.current()
    if now.faction != "player":
        table.model.add("<next_turn/>", " Next.")
        await table.turn("Go on.")
        state = await table.state()
        now = state.combat.current()
    who = "u1" if now.id == "u1" else "u2"
    weapon = "longsword" if who == "u1" else "quarterstaff"
    said = await engine.player_attack(CHANNEL, who, "p", weapon, "Rat", confirmed=True)
    assert "attacks Rat" in said
    with pytest.raises(BadInput, match="no action left"):
        await engine.player_attack(CHANNEL, who, "p", weapon, "Rat", confirmed=True)
    other = "u2" if who == "u1" else "u1"
    with pytest.raises(BadInput, match="turn"):
        await engine.player_attack(CHANNEL, other, "p", "longsword" if other == "u1" else "quarterstaff", "Rat")
    assert "(reaction)" in await engine.player_attack(CHANNEL, other, "p", "longsword" if other == "u1" else "quarterstaff",
                                                      "Rat", confirmed=True, reaction=True)


def test_grapple_and_shove_are_contests_that_take_an_attack_and_refuse_the_too_big():
    from engine.tools.grapple import grapple  # noqa: F401  (the tool, registered)

    state = new_state()
    assert call(ctx_for(state), '<start_combat>{"enemy": [{"monster": "goblin"}, {"monster": "ogre"}, '
                                '{"monster": "giant ape"}]}</start_combat>').ok
    turn_of(state, "Aria")
    ctx = ctx_for(state, "combat")
    shoved = call(ctx, '<grapple attacker="Aria" target="Goblin" kind="shove"/>')
    assert shoved.ok and shoved.observation.startswith("Aria tries to shove Goblin: Athletics 1d20+5 → ")
    assert ("knocked prone" in shoved.observation) == ("prone" in next(p for p in state.combat.order
                                                                       if p.name == "Goblin").conditions)
    assert "against Acrobatics 1d20+2 → " in shoved.observation  # the goblin's DEX +2 beats its Athletics (STR -1)
    too_big = call(ctx, '<grapple attacker="Aria" target="Giant Ape"/>')
    assert not too_big.ok and "Giant Ape is too big (huge) for Aria (medium) to grapple" in too_big.observation
    second = call(ctx, '<grapple attacker="Aria" target="Ogre"/>')  # large: one size up is allowed
    assert not second.ok and "no action left" in second.observation  # her one attack is spent
    turn_of(state, "Aria")
    for seed in range(40):
        trial = GameState.model_validate(state.model_dump())
        won = call(ctx_for(trial, "combat", seed=seed), '<grapple attacker="Aria" target="Ogre"/>')
        if "is grappled" in won.observation:
            assert "grappled" in next(p for p in trial.combat.order if p.name == "Ogre").conditions
            break
    else:
        raise AssertionError("never won")
