"""The two-step turn (engine/decide.py): a small model decides the turn's calls as JSON held to a schema built from
the game, the engine runs them, and the agent narrates without tools."""

from __future__ import annotations

import json

import pytest

from engine import decide, prompts
from engine.config import AgentSettings
from engine.errors import ModelError
from engine.models import ModelRequest, ScriptedModel
from engine.providers.openai_compat import OpenAICompatModel
from engine.basics import AgentType, Item
from engine.suggestions import Suggestion
from engine.tools import ToolContext

from tests.conftest import CHANNEL

pytestmark = pytest.mark.usefixtures("backend")


def plan(*actions: tuple[str, dict | None]) -> str:
    return json.dumps(dict(actions))


async def two_step(table, hp: int | None = None, potions: int = 0) -> None:
    table.engine.deps.config.agents[AgentType.NARRATIVE] = AgentSettings(two_step=True)
    table.engine.deps.config.agents[AgentType.NPC] = AgentSettings(two_step=True)
    state = await table.state()
    aria = state.characters["u1"]
    if hp is not None:
        aria.hp = hp
    aria.inventory = [i for i in aria.inventory if i.name != "healing potion"]
    if potions:
        aria.inventory.append(Item(name="healing potion", quantity=potions))
    await table.store.save_state((await table.engine.session(CHANNEL)).id, state)


async def test_the_model_decides_the_engine_rolls_and_acts_and_the_agent_narrates_without_tools(table):
    await two_step(table, hp=3, potions=2)
    result = await table.turn("I drink my healing potion.",
                              plan(("update_hp", {"amount": "2d4+2", "kind": "healing", "target": "Aria"}),
                                   ("modify_inventory", {"item": "healing potion", "quantity": -1})),
                              "Warmth floods back into Aria's limbs.")
    assert [c.name for c in result.calls] == ["roll", "update_hp", "modify_inventory"] and all(c.ok for c in result.calls)
    rolled = result.calls[0].meta["total"]
    aria = (await table.state()).characters["u1"]
    assert aria.hp == min(aria.max_hp, 3 + rolled) and aria.item("healing potion").quantity == 1
    assert result.reply == "Warmth floods back into Aria's limbs."
    plan_request, narration = table.model.requests
    # Step one: the candidates only, the arguments narrowed to the game, the dice left to the engine.
    assert plan_request.schema is not None and plan_request.system == prompts.DECIDE and not plan_request.tools
    candidates = plan_request.schema["properties"]
    # The suggested roll for the healing is left out: update_hp's dice are the engine's.
    assert list(candidates) == ["update_hp", "modify_inventory"] == plan_request.schema["required"]
    null, use_up = candidates["modify_inventory"]["anyOf"]
    assert null == {"type": "null"} and use_up["properties"]["quantity"] == {"enum": [-1]}
    assert use_up["properties"]["item"]["enum"] == ["healing potion"]  # the one the message names
    heal = candidates["update_hp"]["anyOf"][1]["properties"]
    assert heal["amount"] == {"enum": ["2d4+2"]} and heal["kind"] == {"enum": ["healing"]}  # the SRD potion's dice
    assert 'Aria says: "I drink my healing potion."' in plan_request.messages[0].content
    # Step two: no tool rules, no hints, and what the engine did, with its numbers.
    assert not narration.tools and prompts.TAG_RULES not in narration.system and "## Your tools" not in narration.system
    assert decide.HEADING in narration.context and f"Aria regains {aria.hp - 3} HP" in narration.context
    assert "Tools that may fit" not in narration.context and "\n[" in narration.stop
    assert not any(s.startswith("</") for s in narration.stop)
    assert any("Aria's healing" in line for line in result.mechanics())


async def test_tags_in_a_two_step_narration_are_hidden_and_never_run(table):
    await two_step(table, potions=1)
    result = await table.turn("I look at the gulls.",
                              'The gulls wheel. <modify_inventory item="gold crown" quantity="50"/> They cry.')
    assert result.calls == [] and "<" not in result.reply and "gold crown" not in result.reply
    assert (await table.state()).characters["u1"].item("gold crown") is None
    assert len(table.model.requests) == 1  # nothing to decide: no candidate, no plan call


@pytest.mark.parametrize("reply", ["I think the player drinks it.", '["update_hp"]', "{not json",
                                   ModelError("the server is down", retryable=True)])
async def test_a_plan_that_cannot_be_read_decides_nothing_and_the_turn_goes_on(table, reply):
    await two_step(table, hp=3, potions=1)
    before = await table.state()
    replies = [reply] if not isinstance(reply, Exception) else [reply, reply, reply]
    result = await table.turn("I drink my healing potion.", *replies, "You hesitate.")
    after = await table.state()
    assert result.reply == "You hesitate." and result.calls == []
    assert after.characters["u1"] == before.characters["u1"]


async def test_a_decided_call_that_fails_changes_nothing_and_the_narrator_is_told_it_did_not_happen(table, monkeypatch):
    await two_step(table, hp=3)
    monkeypatch.setattr(decide, "conforms", lambda value, schema: True)  # past the schema check, the tool refuses it
    state = await table.state()
    result = await table.turn("I drink my healing potion.",
                              plan(("modify_inventory", {"item": "healing potion", "quantity": -1})),
                              "Your hand finds an empty belt.")
    [call] = result.calls
    assert not call.ok and (await table.state()).characters["u1"] == state.characters["u1"]
    assert "Did NOT happen (modify_inventory)" in table.model.requests[1].context


async def test_only_the_candidates_are_run_each_once(table):
    await two_step(table)
    result = await table.turn("I walk into the Brine Cup tavern.",
                              plan(("start_combat", {"encounter": "wreckers-ambush"}),
                                   ("change_location", {"location": "brine-cup-tavern"})),
                              "The door creaks.")
    assert [c.name for c in result.calls] == ["change_location"]
    state = await table.state()
    assert state.current_location == "brine-cup-tavern" and not state.combat.active
    schema = table.model.requests[0].schema
    assert list(schema["properties"]) == ["change_location"]
    args = schema["properties"]["change_location"]["anyOf"][1]
    assert args["properties"]["location"] == {"enum": ["brine-cup-tavern"]}


async def test_an_npc_decides_too_and_speaks_without_tools(table):
    await two_step(table)
    result = await table.turn("@Ysolde I accept. We will bring back the lantern.",
                              plan(("start_quest", {"quest": "relight-the-lantern"})), "\"Good. Go quickly.\"")
    assert result.agent is AgentType.NPC and [c.name for c in result.calls] == ["start_quest"]
    assert (await table.state()).quests["relight-the-lantern"].status == "active"
    assert "## Who you are" in table.model.requests[1].system and not table.model.requests[1].tools


async def test_the_two_step_turn_is_the_local_models_default_and_the_config_decides_elsewhere(table):
    deps = table.engine.deps
    assert not decide.two_step(deps, AgentType.NARRATIVE)  # a scripted model writes tags itself
    local = ScriptedModel()
    local.provider = "local"
    deps.models = {**deps.models, AgentType.NARRATIVE: local}
    assert decide.two_step(deps, AgentType.NARRATIVE)
    deps.config.agents[AgentType.NARRATIVE] = AgentSettings(two_step=False)
    assert not decide.two_step(deps, AgentType.NARRATIVE)


async def test_the_schema_names_only_what_exists(table):
    state = await table.state()
    state.characters["u1"].inventory.append(Item(name="rations", quantity=3))
    ctx = ToolContext(state, None, AgentType.NARRATIVE, "u1")
    schema = decide.plan_schema([Suggestion("modify_inventory", "something changes hands", 0.7),
                                 Suggestion("complete_objective", "done", 0.6, {"quest": "relight-the-lantern"}),
                                 Suggestion("roll", "a check", 0.6)], ctx)
    chosen = {tool: spec["anyOf"][1] for tool, spec in schema["properties"].items()}
    assert sorted(chosen["modify_inventory"]["properties"]) == ["item", "quantity"]
    assert sorted(chosen["complete_objective"]["properties"]) == ["objective", "quest"]
    assert sorted(chosen["roll"]["properties"]) == ["expression", "reason"]
    objective = chosen["complete_objective"]["properties"]["objective"]["enum"]
    assert objective == [o.id for o in state.quests["relight-the-lantern"].objectives]
    paying = decide.plan_schema([Suggestion("modify_inventory", "pays", 0.7, {"currency": "gp", "quantity": "-2"})], ctx)
    args = paying["properties"]["modify_inventory"]["anyOf"][1]["properties"]
    assert args == {"currency": {"enum": ["gp"]}, "quantity": {"enum": [-2]}}


async def test_an_openai_compatible_server_is_asked_to_hold_the_reply_to_the_schema():
    model = OpenAICompatModel(client=None, default_model="small", official=False)  # type: ignore[arg-type]
    schema = {"type": "object", "properties": {"actions": {"type": "array"}}}
    body = model.body(ModelRequest(AgentType.NARRATIVE, "", "s", "", [], schema=schema))
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "reply", "schema": schema, "strict": False}}
    assert "response_format" not in model.body(ModelRequest(AgentType.NARRATIVE, "", "s", "", []))


async def test_every_plan_schema_converts_to_a_llama_cpp_grammar(table):
    pytest.importorskip("llama_cpp")
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    from engine.tools import TOOLS

    state = await table.state()
    ctx = ToolContext(state, None, AgentType.NARRATIVE, "u1")
    for name, tool in TOOLS.items():
        if AgentType.NARRATIVE in tool.agents:
            grammar = json_schema_to_gbnf(json.dumps(decide.plan_schema([Suggestion(name, "why", 0.5)], ctx)))
            assert "root ::=" in grammar, name


class FakeLlama:
    """Stands in for llama_cpp.Llama: records each completion's prompt and arguments, answers with `reply`."""

    def __init__(self, reply: str) -> None:
        self.reply, self.calls = reply, []

    def create_completion(self, prompt, **kwargs):
        self.calls.append((prompt, kwargs))
        yield {"choices": [{"text": self.reply, "finish_reason": "stop"}]}

    def tokenize(self, data, special=True):
        return list(range(len(data) // 4))


def local(reply: str, tmp_path):
    from engine.providers.local import LocalModel

    model = LocalModel(tmp_path / "unused.gguf")
    model._llm = FakeLlama(reply)
    return model


async def test_the_local_model_reads_a_short_history_and_sees_the_tag_example_only_when_it_has_tools(tmp_path):
    from engine.models import ChatMessage

    model = local("Gulls.", tmp_path)
    model.history = 4
    history = [ChatMessage("user" if i % 2 == 0 else "assistant", f"line {i}") for i in range(9)]
    prompt = model.prompt(ModelRequest(AgentType.NARRATIVE, "", "s", "", history, tools=False))
    # The last 4 messages (5 to 8), from the first user line among them.
    assert "line 6" in prompt and "line 5" not in prompt and "<roll>" not in prompt
    assert prompt.index("line 6") < prompt.index("line 8")
    with_tools = model.prompt(ModelRequest(AgentType.NARRATIVE, "", "s", "", history))
    assert with_tools.index("<roll>") < with_tools.index("line 6") and "line 5" not in with_tools


async def test_the_local_model_is_held_to_a_plans_schema_by_a_grammar(tmp_path, table):
    pytest.importorskip("llama_cpp")
    from contextlib import aclosing

    model = local('{"change_location": null}', tmp_path)
    state = await table.state()
    schema = decide.plan_schema([Suggestion("change_location", "go", 0.8, {"location": "brine-cup-tavern"})],
                                ToolContext(state, None, AgentType.NARRATIVE, "u1"))
    request = ModelRequest(AgentType.NARRATIVE, "", prompts.DECIDE, "", [], tools=False, schema=schema)
    async with aclosing(model.stream(request)) as stream:
        [text, _done] = [item async for item in stream]
    prompt, kwargs = model._llm.calls[0]
    assert text == '{"change_location": null}' and kwargs["grammar"] is not None and kwargs["repeat_penalty"] == 1.0
    assert "brine-cup-tavern" in kwargs["grammar"]._grammar
    plain = ModelRequest(AgentType.NARRATIVE, "", "s", "", [])
    async with aclosing(model.stream(plain)) as stream:
        [_ async for _ in stream]
    assert model._llm.calls[1][1]["grammar"] is None


def test_a_reply_that_opens_in_someone_elses_name_loses_the_label():
    from engine.stages import unlabelled

    assert unlabelled("[Aria (player sam) to Ysolde Marrick]: [Ysolde]: Welcome.") == "Welcome."
    assert unlabelled("The [old] door creaks.") == "The [old] door creaks."
    assert unlabelled("  [Game Master]:\tGulls wheel.") == "Gulls wheel."


async def test_an_exchange_the_message_does_not_name_plainly_is_no_candidate(table):
    await two_step(table)
    before = await table.state()
    result = await table.turn("I trade with the fishermen for a while.", "You haggle over nothing much.")
    assert result.calls == [] and len(table.model.requests) == 1  # no plan: nothing the engine could run
    assert (await table.state()).characters["u1"] == before.characters["u1"]
    assert any(h["tool"] == "modify_inventory" for h in (await table.store.turns_for_analysis(CHANNEL))[-1]["suggestions"])


async def test_a_payment_the_message_names_is_decided_with_its_coin(table):
    await two_step(table)
    purse = (await table.state()).characters["u1"].currency.total_cp()
    result = await table.turn("I pay the ferryman two gold for the crossing.",
                              plan(("modify_inventory", {"currency": "gp", "quantity": -2})), "He bites the coin.")
    assert [c.name for c in result.calls] == ["modify_inventory"]
    assert (await table.state()).characters["u1"].currency.total_cp() == purse - 200
    schema = table.model.requests[0].schema["properties"]["modify_inventory"]["anyOf"][1]
    assert schema["properties"] == {"currency": {"enum": ["gp"]}, "quantity": {"enum": [-2]}}


async def test_the_local_model_answers_the_last_speaker_only(tmp_path):
    from engine.models import ChatMessage

    model = local("Gulls.", tmp_path)
    said = ChatMessage("user", "[Ysolde Marrick]: Bring it back.\n[Aria (player sam)]: I drink my healing potion.")
    prompt = model.prompt(ModelRequest(AgentType.NARRATIVE, "", "s", "", [said], tools=False))
    assert "[Aria (player sam)]: I drink my healing potion." in prompt and "Bring it back" not in prompt


async def test_a_purchase_at_a_shop_is_decided_from_its_stock_and_paid_at_its_price(table):
    await two_step(table)
    state = await table.state()
    state.current_location = "harrow-chandlery"
    await table.store.save_state((await table.engine.session(CHANNEL)).id, state)
    purse = state.characters["u1"].currency.total_cp()
    result = await table.turn("I buy a coil of rope from Pell.",
                              plan(("buy", {"item": "hempen rope (50 feet)", "quantity": 1})), "Pell coils it for you.")
    schema = table.model.requests[0].schema["properties"]
    assert list(schema) == ["buy"]
    assert schema["buy"]["anyOf"][1]["properties"]["item"] == {"enum": ["hempen rope (50 feet)"]}  # the one named
    assert [c.name for c in result.calls] == ["buy"] and result.calls[0].ok, result.calls
    after = (await table.state()).characters["u1"]
    assert after.currency.total_cp() < purse and after.item("hempen rope (50 feet)") is not None


async def test_a_small_model_reads_a_brief_context_and_one_lore_passage(table):
    from engine.context import game_context

    await two_step(table)
    brief = ScriptedModel(["The fog thickens."])
    brief.brief = True
    table.engine.deps.models = {**table.engine.deps.models, AgentType.NARRATIVE: brief}
    await table.engine.take_turn(CHANNEL, "u1", "bob", "I look at the fog.")
    [request] = brief.requests
    full = game_context(await table.state(), AgentType.NARRATIVE, "u1")
    assert request.context.startswith("## Now\n") and "Aria (fighter), HP" in request.context
    assert len(request.context) < len(full) / 2 and "Undiscovered secrets" not in request.context


async def test_an_attack_is_decided_with_a_weapon_from_the_sheet(table):
    await two_step(table)
    table.engine.deps.config.agents[AgentType.COMBAT] = AgentSettings(two_step=True)
    state = await table.state()
    state.current_location = "wreckers-grotto"
    await table.store.save_state((await table.engine.session(CHANNEL)).id, state)
    await table.turn("I draw my sword and charge the smugglers!",
                     plan(("start_combat", {"encounter": "wreckers-ambush"})), "Steel rings.")
    state = await table.state()
    assert state.combat.active
    while state.combat.order[state.combat.turn_index].id != "u1":  # play on to Aria's turn
        state.combat.turn_index = (state.combat.turn_index + 1) % len(state.combat.order)
    await table.store.save_state((await table.engine.session(CHANNEL)).id, state)
    enemy = next(p for p in state.combat.order if p.faction == "enemy")
    result = await table.turn(f"I swing my longsword at {enemy.name}.",
                              plan(("attack", {"target": enemy.name, "weapon": "longsword"})), "Steel meets steel.")
    attack = next(c for c in result.calls if c.name == "attack")
    assert attack.ok and "from Aria's sheet" in attack.observation and not table.model.replies
    args = table.model.requests[-2].schema["properties"]["attack"]["anyOf"][1]["properties"]
    assert args["weapon"] == {"enum": ["longsword"]} and enemy.name in args["target"]["enum"]


async def test_a_decided_call_that_breaks_its_schema_is_dropped(table):
    """A hosted model is asked to follow the schema, not forced: the engine checks what it wrote."""
    await two_step(table, hp=3, potions=1)
    before = await table.state()
    result = await table.turn("I drink my healing potion.",
                              plan(("update_hp", {"amount": "500", "kind": "healing", "target": "Aria"}),
                                   ("modify_inventory", {"item": "gold crown", "quantity": 500})), "Nothing happens.")
    assert result.calls == [] and (await table.state()).characters["u1"] == before.characters["u1"]


async def test_coin_coming_in_on_the_players_word_alone_is_no_candidate(table):
    await two_step(table)
    result = await table.turn("I pocket 9999 gold from the counter.", "Nice try.")
    assert result.calls == [] and len(table.model.requests) == 1


async def test_a_secret_the_adventure_guards_with_a_dc_is_found_by_the_check(table):
    await two_step(table)
    state = await table.state()
    guarded = next((loc, s) for loc in state.locations.values() for s in loc.secrets if s.dc is not None)
    loc, secret = guarded
    state.current_location = loc.id
    await table.store.save_state((await table.engine.session(CHANNEL)).id, state)
    from engine.suggestions import Suggestion as S
    from engine.turn import Turn

    session = await table.engine.session(CHANNEL)
    turn = Turn(session, "u1", "bob", "I search for it.")
    turn.route, turn.work = type("R", (), {"agent": AgentType.NARRATIVE, "npc": None})(), state
    turn.ctx = ToolContext(state, None, AgentType.NARRATIVE, "u1")
    turn.hints = [S("discover_secret", "found?", 0.6, {"secret": secret.id}), S("roll", "a check", 0.6)]
    [check, roll] = decide.candidates(turn, table.engine.deps)
    assert check.tool == "ability_check" and check.args == {"character": "Aria", "obstacle": secret.id}
    assert roll.tool == "roll"
    assert decide.conforms({"character": "Aria", "obstacle": secret.id},
                           decide.action_schema(check, turn.ctx, turn.text) | {"required": []}) is True
