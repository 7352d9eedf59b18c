"""The pre-flight tool suggestor: which hints each message earns, for which agent."""

from __future__ import annotations

import pytest

from engine.basics import AgentType
from engine.state import Participant
from engine.suggestions import LEXICON, RULES, Reading, format_suggestions, suggest
from engine.suggestions.lexicon import _compile
from engine.suggestions.reading import _MOST
from tests.conftest import CHANNEL

N, C, P = AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC


def tools(state, text, agent=N, npc=None):
    return [s.tool for s in suggest(state, text, agent, state.npcs.get(npc) if npc else None)]


@pytest.mark.parametrize("text,expected", [
    ("I drink my healing potion.", {"update_hp", "modify_inventory"}),
    ("We make camp and sleep.", {"long_rest"}),
    ("I sit to catch my breath.", {"short_rest"}),
    ("I try to climb the sea wall.", {"roll"}),
    ("I buy a rope from the chandler.", {"modify_inventory"}),
    ("I search the quay for anything hidden.", {"roll"}),
    ("After dark I watch the northern cliffs from the end of the quay for a green glow.", {"roll", "discover_secret"}),
    ("I lay on hands on Mira.", {"update_hp"}),
    ("Cure wounds on Dorn, first-level slot.", {"update_hp", "roll"}),
    ("I leap off the quay onto the deck fifteen feet below.", {"roll", "update_hp"}),
    ("I relight the lamps along the pier.", {"update_location_state"}),
    ("Tell me about the Sundering.", {"search_lore"}),
    ("What's the harbormaster like?", {"get_npc"}),
    ("We rent a room and sleep till dawn.", {"long_rest", "modify_inventory"}),
    ("I lift the sleeping sailor's purse.", {"modify_inventory", "roll"}),
    ("I lift the brass key off Ysolde's belt.", {"modify_inventory", "roll"}),
])
def test_narrator_hints(state, text, expected):
    assert expected <= set(tools(state, text))


@pytest.mark.parametrize("text", [
    "What a grey morning it is.",
    "I fight the urge to yawn.",  # idioms: the keyword fits, the tool does not
    "I give up on the idea.",
    "I take a moment to think.",
    "I drink in the view.",
    "I pay attention to the gulls.",
    "I roll my eyes at Dorn.",
    "Should we buy a rope?",  # asked about, promised, denied or put off: not done now
    "If we sleep here the tide will take us.",
    "Nobody draw a blade, we're just talking.",
    "I'll visit the cottage later.",
    "Is the Brine Cup far from here?",
    "OOC: brb, grabbing a snack",
    "I hurt my pride slipping on fish guts, but I'm fine, nothing broken.",
])
def test_plain_talk_and_idioms_earn_no_hints(state, text):
    assert tools(state, text) == []


def test_travel_names_the_exit_and_not_a_shut_one_unless_the_way_opens(state):
    hint = suggest(state, "I walk into the Brine Cup.", N)[0]
    assert (hint.tool, hint.args, hint.confidence) == ("change_location", {"location": "brine-cup-tavern"}, 0.8)
    for said in ("lead on to the tavrn", "Trudging up the hill to see Brisa", "the keeper's cottage pls",
                 "Open the door to the Brine Cup and step inside."):  # a typo, a resident, a bare place, a place before
        assert "change_location" in tools(state, said), said
    assert "change_location" not in tools(state, "We cross the causeway to Gannet Rock lighthouse.")  # shut
    hint = next(s for s in suggest(state, "We wait for low tide, then cross the causeway to the lighthouse.", N)
                if s.tool == "change_location")
    assert hint.args == {"location": "gannet-rock-lighthouse"} and "once the way opens" in hint.reason


def test_orders_to_an_npc_move_the_npc_not_the_party(state):
    found = suggest(state, "Ysolde, head over to the Brine Cup and tell Odile we want rooms.", N)
    assert [(s.tool, s.args) for s in found if s.tool in ("change_location", "move_npc_to_location")] == [
        ("move_npc_to_location", {"npc": "ysolde-marrick", "location": "brine-cup-tavern"})]
    spoken = suggest(state, "Go fetch Brisa from her cottage, would you?", P, state.npcs["ysolde-marrick"])
    assert [s.args for s in spoken if s.tool == "move_npc_to_location"] == [
        {"npc": "ysolde-marrick", "location": "keepers-cottage"}]


def test_party_members_join_and_leave(state):
    assert "add_to_party" in tools(state, "Ysolde, you're with us. Grab your coat.")
    assert "modify_inventory" not in tools(state, "Ysolde, you're with us. Grab your coat.")
    assert "remove_from_party" not in tools(state, "We leave Ysolde at the harbor office.")  # she is not with us
    state.party.npc_ids.append("ysolde-marrick")
    assert "remove_from_party" in tools(state, "We leave Ysolde at the harbor office.")


def test_quest_acceptance_points_at_the_offered_quest(state):
    hint = next(s for s in suggest(state, "Yes, we'll do it.", N) if s.tool == "start_quest")
    assert hint.args == {"quest": "relight-the-lantern"}
    assert "start_quest" in tools(state, "I accept your offer.", P, npc="ysolde-marrick")
    assert "start_quest" not in tools(state, "I accept your offer.", P, npc="odile-farrow")  # not her quest


def test_purchases_at_an_open_shop_point_at_buy_and_sell(state):
    assert "modify_inventory" in tools(state, "I buy a rope from the chandler.")  # no shop on the quay
    state.current_location = "harrow-chandlery"
    assert "buy" in tools(state, "I buy a rope and two torches.") and "modify_inventory" not in tools(state, "I buy a rope.")
    assert "sell" in tools(state, "I sell him the silver locket.")
    assert "buy" in tools(state, "I buy the lantern from you, here's the coin.", P, npc="pell-harrow")
    assert "buy" not in tools(state, "I buy a rope.", P, npc="ysolde-marrick")  # she keeps no shop
    state.npcs["pell-harrow"].hp = 0  # the shop is closed while its keeper is down
    assert "modify_inventory" in tools(state, "I buy a rope.") and "buy" not in tools(state, "I buy a rope.")


def test_npc_hints_use_only_npc_tools(state):
    found = tools(state, "Will you come with us? And tell me, what secret do you know?", P, npc="brisa-wendle")
    assert {"add_to_party", "discover_secret"} <= set(found)
    assert not {"start_combat", "update_hp", "next_turn"} & set(found)


def test_combat_hints(state):
    state.current_location = "wreckers-grotto"
    state.combat.active = True
    state.combat.order = [Participant(id="u1", name="Aria", faction="player", initiative=10, ac=18),
                          Participant(id="crab", name="Crab", faction="enemy", initiative=5, ac=11, hp=3, max_hp=3)]
    assert tools(state, "I stab the crab!", C)[:2] == ["next_turn", "attack"]  # the engine rolls the attack
    assert tools(state, "I ready my spear to strike if it comes closer.", C) == ["next_turn"]  # readied, not now
    assert set(tools(state, "Sacred flame on the crab", C)) == {"next_turn", "update_hp", "roll"}  # a save spell
    assert "attack" not in tools(state, "Mira fires magic missile at it", C)
    assert tools(state, "what's its AC again", C) == []  # a question without a mark passes no turn
    assert tools(state, "The crab scuttles off into the water. We let it go.", C) == ["end_combat"]
    state.combat.order[1].hp = 0
    assert tools(state, "Is it over?", C)[:2] == ["end_combat", "award_xp"]  # the foes overcome earn XP
    state.leveling = "milestone"
    assert "award_xp" not in tools(state, "Is it over?", C)


def test_a_party_members_own_spell_points_to_cast_spell(state):
    [hint] = [h for h in suggest(state, "Bram casts fire bolt at the gull", N) if h.tool == "cast_spell"]
    assert hint.args == {"spell": "Fire Bolt"}
    assert set(tools(state, "Magic missile at the crab!", C)) == {"cast_spell"}  # no update_hp: the cast applies it
    assert "cast_spell" not in tools(state, "I light the lantern by the door.")  # a spell's name, not a casting
    assert "cast_spell" not in tools(state, "I cast a glance at the harbour.")  # no spell of the party's named
    assert "cast_spell" not in tools(state, "Cure wounds on Dorn, first-level slot.")  # nobody here has it


def test_start_combat_names_the_encounter_here(state):
    state.current_location = "wreckers-grotto"
    hint = next(s for s in suggest(state, "We charge the smugglers!", N) if s.tool == "start_combat")
    assert hint.args == {"encounter": "wreckers-ambush"} and hint.confidence == 0.8


def test_the_reader_splits_sentences_clauses_questions_and_requests():
    r = Reading("Can we rest? I'll pay, okay. What's the deal!? Go fetch her, would you? Sure—we're in")
    assert r.tokens[:6] == ["can", "we", "rest", "i'll", "pay", "okay"]
    assert len(r.stops) == 5 and r.questions == {0, 2, 3} and r.requests == {0, 3}
    assert {r.tokens[i] for i in r.clause_ends} >= {"rest", "pay", "okay", "her", "sure", "in"}
    assert Reading("chuggin' my potion").tokens == ["chuggin", "my", "potion"]
    assert Reading("Ysolde’s “light”").tokens == ["ysolde's", "light"]
    assert Reading("What was Aldous like?").raw_tokens()[2] == "Aldous"


def test_acts_leave_out_what_is_promised_denied_asked_or_put_off():
    def done(text: str, category: str) -> bool:
        return bool(Reading(text).acts(category))
    assert done("I buy a rope.", "trade") and done("Can we buy a rope?", "trade")  # a request is a move
    assert not done("Should we buy a rope?", "trade") and not done("I would buy a rope.", "trade")
    assert not done("I don't buy it.", "trade") and not done("I'll buy it later.", "trade")
    assert not done("I give up.", "give") or Reading("I give up.").acts("give", "not_trade") == []


def test_phrases_match_gaps_forms_and_clause_ends():
    r = Reading("I pry the old dagger out. Deal. I'll deal with you.")
    assert [r.words(h) for h in r.get("trade")] == ["pry the old dagger out"]
    assert [r.words(h) for h in r.get("accept")] == ["deal"]  # "deal $", not "deal with you"
    assert {r.words(h) for h in r.get("not_accept")} == {"deal with you"}
    assert Reading("she chugs it").get("consume") and Reading("chuggin").get("consume")


def test_hits_are_bounded_however_long_the_message():
    r = Reading("I buy a rope. " * 500)
    assert len(r.get("trade")) == _MOST and r.get("trade")[0].start == 1


def test_a_phrase_must_open_with_a_word():
    with pytest.raises(ValueError, match="must start with a word"):
        _compile({"bad": "*? rope"})
    assert _compile(LEXICON)  # the shipped lexicon compiles


def test_a_broken_rule_costs_nothing(state, monkeypatch):
    def broken(situation):
        raise RuntimeError("bug")

    monkeypatch.setattr("engine.suggestions.RULES", [("broken", frozenset({N}), broken), *RULES])
    assert "long_rest" in tools(state, "We sleep.")


def test_format_is_empty_without_hints_and_lists_examples(state):
    assert format_suggestions([]) == ""
    text = format_suggestions(suggest(state, "I walk into the Brine Cup.", N))
    assert '<change_location location="brine-cup-tavern"/>' in text and "hints, not orders" in text


async def test_the_engine_puts_hints_in_context_and_remembers_them(table):
    await table.turn("I drink my healing potion.", "Gulp.")
    assert "update_hp (highly recommended)" in table.model.requests[-1].context
    assert [s.tool for s in table.engine.last_suggestions[CHANNEL]][:2] == ["update_hp", "modify_inventory"]
    cfg = table.engine.deps.config
    table.engine.deps.config = cfg.model_copy(update={"turn": cfg.turn.model_copy(update={"suggestions": False})})
    await table.turn("I drink another potion.", "Gulp.")
    assert "Tools that may fit" not in table.model.requests[-1].context and table.engine.last_suggestions[CHANNEL] == []


async def test_a_secret_the_adventure_guards_with_a_dc_is_hinted_as_its_check(table):
    await table.turn("After dark I watch the northern cliffs from the end of the quay for a green glow.", "Waves.")
    hinted = {s.tool: s.args for s in table.engine.last_suggestions[CHANNEL]}
    assert hinted.get("ability_check") == {"character": "Aria", "obstacle": "green-glimmer"}  # DC 12 perception
    assert "discover_secret" not in hinted  # which would refuse it: the check finds it
    assert 'obstacle="green-glimmer"' in table.model.requests[-1].context
    state = await table.state()
    state.locations["saltmere-quay"].secret("green-glimmer").discovered = True  # found: nothing left to hint
    session = await table.engine.session(CHANNEL)
    await table.store.save_state(session.id, state, [], version=session.version)
    await table.turn("After dark I watch the northern cliffs from the end of the quay for a green glow.", "Waves.")
    assert "ability_check" not in {s.tool for s in table.engine.last_suggestions[CHANNEL]}


@pytest.mark.parametrize("text, args", [
    ("I pay Odile two gold for a room for the night.", {"currency": "gp", "quantity": "-2"}),
    ("I'll take a room for the night. Here are two gold pieces.", {"currency": "gp", "quantity": "-2"}),
    ("I sell my longsword to the smith for 5 gold.", {"currency": "gp", "quantity": "5"}),
    ("I pocket the 12 silver.", {"currency": "sp", "quantity": "12"}),
    ("I sell my longsword to the smith.", {"item": "longsword", "quantity": "-1"}),
    ("I hand her my potion.", {"item": "healing potion", "quantity": "-1"}),
    ("I give away my rations to a hungry fisherman.", {"item": "rations", "quantity": "-1"}),
    ("I buy a lantern.", {"item": "lantern", "quantity": "1"}),
    ("I pick up the coil of chain from the dock.", {"item": "coil of chain", "quantity": "1"}),
    ("We accept Ysolde's offer: we will find the lantern.", {}),  # finding is not taking
    ("I take the 10 gold and pay 2 silver.", {}),  # two sums: not plain
    ("A gold for your thoughts.", {}),  # no direction
])
def test_what_changes_hands_is_read_only_when_the_message_says_it_plainly(text, args):
    from engine.suggestions import changes_hands

    assert changes_hands(text.lower(), ["healing potion", "rations", "longsword"]) == args


def test_a_carried_item_named_with_blanks_only_does_not_stop_the_reading():
    from engine.suggestions import changes_hands

    # An imported sheet may hold such a name (tool arguments are stripped, sheets are not).
    assert changes_hands("i give her the rope", ["rope", " "]) == {"item": "rope", "quantity": "-1"}
    assert changes_hands("thanks!", [" "]) == {}


def test_a_message_of_no_words_breaks_no_rule(state):
    """Only invisible characters (a zero-width space, a byte-order mark): no words, so no hint, and no rule fails."""
    from structlog.testing import capture_logs

    for message in ("\u200b", "\ufeff", "\u202e", "…"):
        for agent in (AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC):
            with capture_logs() as logs:
                assert suggest(state, message, agent) == []
            assert [e for e in logs if e["event"] == "suggestion_rule_failed"] == []


def test_a_class_feature_named_suggests_using_it_and_a_shove_the_contest(state):
    from engine.characters import make_character

    state.characters["u3"] = make_character("u3", "Korg", "barbarian", 3)
    raging = suggest(state, "I let out a roar and rage at the bandits!", C, actor_id="u3")
    assert any(s.tool == "use_feature" and s.args == {"character": "Korg", "feature": "Rage"} for s in raging)
    assert not any(s.tool == "use_feature" for s in suggest(state, "I rage at the bandits!", C, actor_id="u1"))  # a fighter
    turned = suggest(state, "Kira, turn undead on the skeletons!", C, actor_id="u1")
    assert not any(s.tool == "use_feature" for s in turned)  # Aria is no cleric
    shoved = suggest(state, "I shove the smuggler into the harbour.", C, actor_id="u1")
    assert any(s.tool == "grapple" and s.args == {"kind": "shove"} for s in shoved)
    held = suggest(state, "I grapple the thug and pin him down.", N, actor_id="u1")
    assert any(s.tool == "grapple" and s.args == {"kind": "grapple"} for s in held)


def test_reckless_attack_is_suggested_to_a_barbarian_only(state):
    from engine.characters import make_character

    state.characters["u3"] = make_character("u3", "Korg", "barbarian", 2)
    told = suggest(state, "I swing recklessly at the ogre.", C, actor_id="u3")
    assert any(s.tool == "use_feature" and s.args.get("feature") == "Reckless Attack" for s in told)
    assert not any(s.tool == "use_feature" for s in suggest(state, "I swing recklessly at the ogre.", C, actor_id="u1"))
