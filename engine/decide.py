"""The two-step turn, for models too small to write tool tags well (the bundled local one, a small hosted one).

Step one decides the turn's tool calls as data: the model answers with one JSON object, `{"actions": [...]}`,
whose schema is built here from the tool registry's argument models and the game state, with the pre-flight
suggestions as the only candidates. A field that names something in the game (a character, an item carried, an
exit, a quest, a secret) may only name what exists, so a small model cannot invent an id; the local model is held
to the schema by a llama.cpp grammar and OpenAI-compatible servers by `response_format`. The engine runs the calls
(the same checks as a tag), rolling any dice a call names first, so every number comes from the engine.
Step two is the agent's ordinary reply, without tools, told what the engine just did (engine/turn.py).

A plan that cannot be read, a model failure, or a call the schema did not offer is logged and dropped: the turn
goes on as if no action had been decided, never failing for it.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import structlog

from . import prompts
from .context import situation
from .deps import Deps
from .loop import AgentRun, Limits, run_agent
from .models import ChatMessage, ModelRequest
from .rules import HEALING_POTIONS, SKILLS
from .rules.equipment import carried_weapons
from .shops import shops_here
from .basics import ABILITIES, AgentType
from .state import GameState
from .suggestions import Suggestion, suggest
from .markup import escape
from .tools import TOOLS, ToolCall, ToolContext, arun_args
from .turn import Turn

log = structlog.get_logger(__name__)

DICE = r"^[1-9]?d(4|6|8|10|12|20)([+-][1-9])?$"
AMOUNT = r"^([1-9][0-9]?|[1-9]?d(4|6|8|10|12|20)([+-][1-9])?)$"  # hit points: a number, or dice the engine rolls
FREE_TEXT = r"^[A-Za-z][A-Za-z' -]{0,38}[A-Za-z]$"
# Arguments worth deciding besides the required ones and those a suggestion already gave: the rest keep their
# defaults (each one the model writes is time on a small model and a chance to go wrong).
WORTH: dict[str, tuple[str, ...]] = {
    "modify_inventory": ("item", "quantity"), "update_hp": ("amount", "kind", "target"), "cast_spell": ("target",),
    "start_combat": ("encounter",), "ability_check": ("dc",), "saving_throw": ("dc",), "roll": ("reason",),
    "attack": ("target", "weapon"),
    "buy": ("quantity",), "sell": ("quantity",),
}
HEADING = "## What happens this turn (the engine has done it: narrate it, with these numbers)"


def two_step(deps: Deps, agent: AgentType) -> bool:
    """Whether this agent's turns are decided first: the config's word, else on for the local model only."""
    chosen = deps.config.agent(agent).two_step
    if chosen is not None:
        return chosen
    model = deps.models.get(agent)
    return getattr(model, "provider", "") == "local"


def candidates(turn: Turn, deps: Deps) -> list[Suggestion]:
    """The actions step one may choose from: the turn's suggestions (worked out here if the config turned the
    hints off, as a two-step turn has no other source of candidates), less two that a small model only gets wrong:
    an exchange whose goods the message does not name plainly (it would invent them), and a roll beside a change
    of hit points (whose dice the engine rolls itself)."""
    assert turn.route is not None and turn.work is not None and turn.ctx is not None
    hints = list(turn.hints)
    if not deps.config.turn.suggestions:
        npc = turn.work.npcs.get(turn.route.npc.id) if turn.route.npc else None
        hints = suggest(turn.work, turn.text, turn.route.agent, npc, deps.config.turn.suggestion_limit, turn.author_id)
    hints = found_by_checks(hints, turn.work, turn.ctx.agent, turn.author_id)
    tools = {h.tool for h in hints}
    out = []
    for h in hints:
        if h.tool not in TOOLS or turn.ctx.agent not in TOOLS[h.tool].agents:
            continue
        if h.tool == "modify_inventory" and (not {"item", "currency", "quantity"} & set(h.args)
                                             or "currency" in h.args and int(h.args.get("quantity", "0")) > 0):
            continue  # goods it cannot name, or coin coming in on the player's word alone ("I pocket 9999 gold")
        if h.tool == "roll" and "update_hp" in tools:
            continue
        out.append(h)
    return out


def found_by_checks(hints: list[Suggestion], state: GameState, agent: AgentType, author_id: str) -> list[Suggestion]:
    """A narrator's discover_secret hint for a secret the adventure guards with a DC becomes the check that finds it
    (discover_secret refuses such a secret: ability_check with its obstacle rolls against the DC and reveals it on
    a success). Dropped when there is no character to roll or a check is already suggested."""
    tools = {h.tool for h in hints}
    out = []
    for h in hints:
        secret = _guarded_secret(state, agent, h)
        if secret is not None:
            actor = state.characters.get(author_id)
            if actor is None or "ability_check" in tools:
                continue
            h = Suggestion("ability_check", f"searching may find it: {secret.skill or 'a'} check, DC {secret.dc}",
                           h.confidence, {"character": actor.name, "obstacle": secret.id})
        out.append(h)
    return out


def _guarded_secret(state: GameState, agent: AgentType, hint: Suggestion):
    """The undiscovered secret a narrator's discover_secret would reveal, when the adventure guards it with a DC."""
    if hint.tool != "discover_secret" or agent is not AgentType.NARRATIVE:
        return None
    found = next((s for loc in state.locations.values() for s in loc.secrets if s.id == hint.args.get("secret")),
                 None)
    return found if found is not None and not found.discovered and found.dc is not None else None


# -- the schema ------------------------------------------------------------------------------------------------------

def _names(values: list[str]) -> dict[str, Any]:
    unique = list(dict.fromkeys(v for v in values if v))
    return {"enum": unique} if unique else {"type": "string", "pattern": FREE_TEXT}


def _field(tool: str, name: str, ctx: ToolContext, hint: Suggestion, text: str) -> dict[str, Any] | None:
    """The schema of one argument, narrowed to what exists in the game (None: the registry's own, loosened)."""
    state, agent = ctx.state, ctx.agent
    actor = state.characters.get(ctx.actor_id or "")
    here = [n for n in state.present_npcs()]
    fighters = [p.name for p in state.combat.order if p.hp is None or p.hp > 0] if state.combat.active else []
    if name in ("character", "attacker") or (name == "name" and tool == "get_character"):
        return _names([c.name for c in state.characters.values()])
    if name == "target":
        if tool == "attack":
            return _names([p for p in fighters if p != (actor.name if actor else None)] or [n.name for n in here])
        return _names([*(c.name for c in state.characters.values()), *fighters, *(n.name for n in here)])
    if name == "item" and tool == "buy":  # what the shops here stock, the one the message names first
        stock = [state.items[e.item].name for s in shops_here(state) for e in s.stock if e.item in state.items]
        return _names(_named(stock, text) or stock)
    if name == "quantity" and tool in ("buy", "sell"):
        return {"type": "integer", "minimum": 1, "maximum": 20}
    if name == "item":
        carried = [i.name for i in actor.inventory] if actor else []
        named = _named(carried, text)
        giving = int(hint.args.get("quantity", "1") or 1) < 0 or tool != "modify_inventory"  # sell, use, give
        return _names(named or carried) if giving and carried else {"type": "string", "pattern": FREE_TEXT}
    if name == "quantity":
        return {"type": "integer", "minimum": -20, "maximum": 20}
    if name == "amount":
        return {"type": "string", "pattern": AMOUNT}
    if name in ("expression", "damage"):
        return {"type": "string", "pattern": DICE if name == "damage" else DICE.replace("$", "( adv| dis)?$")}
    if name == "location":
        loc = state.location()
        if tool == "change_location":
            return _names([e.to for e in loc.exits if loc.exit_open(e)])
        return _names(list(state.locations))
    if name == "quest":
        return _names([q.id for q in state.quests.values() if q.status in ("offered", "active")])
    if name == "objective":
        quest = state.quests.get(hint.args.get("quest", ""))
        pool = [quest] if quest else [q for q in state.quests.values() if q.status in ("offered", "active")]
        return _names([o.id for q in pool for o in q.objectives if not o.done])
    if name == "secret":
        if agent is AgentType.NPC and ctx.npc_id in state.npcs:
            known = state.npcs[ctx.npc_id].knows_secrets
            return _names([s.id for loc in state.locations.values() for s in loc.secrets if s.id in known and not s.discovered])
        return _names([s.id for s in state.location().secrets if not s.discovered])
    if name == "npc":
        if agent is AgentType.NPC and ctx.npc_id:
            return {"enum": [ctx.npc_id]}
        return _names([n.id for n in here])
    if name == "encounter":
        return _names([e.id for e in state.encounters.values() if e.location == state.current_location])
    if name == "skill":
        return {"enum": [*SKILLS, *ABILITIES]}
    if name == "ability":
        return {"enum": list(ABILITIES)}
    if name == "dc":
        return {"enum": [10, 12, 15, 18, 20]}
    if name == "flag":
        return {"type": "string", "pattern": r"^[a-z][a-z0-9_]{1,29}$"}
    if name == "weapon" and tool == "attack" and actor is not None:  # the sheet's weapons: the sheet's numbers
        weapons = [w.name for w in carried_weapons(actor)]
        if weapons:
            return _names(_named(weapons, text) or weapons)
    if name in ("reason", "outcome", "weapon"):
        return {"type": "string", "pattern": r"^[A-Za-z][A-Za-z' ,-]{0,58}[A-Za-z]$"}
    return None


def _named(names: list[str], text: str) -> list[str]:
    """The names whose words the message uses ("a coil of rope" names "hempen rope (50 feet)"), most words first."""
    said = set(re.findall(r"[a-z']{4,}", text))
    scored = [(len(said & set(re.findall(r"[a-z']{4,}", n.lower()))), n) for n in names]
    best = max((score for score, _ in scored), default=0)
    return [n for score, n in scored if score and score == best]


def _loosened(spec: dict[str, Any]) -> dict[str, Any]:
    """The registry's schema for an argument, without the null of an optional and without its decorations."""
    options = spec.get("anyOf")
    if options:
        kept = [o for o in options if o.get("type") != "null"]
        spec = kept[0] if len(kept) == 1 else {"anyOf": kept}
    return {k: v for k, v in spec.items() if k not in ("title", "default", "description")}


def _typed(spec: dict[str, Any], value: str) -> Any:
    if spec.get("type") == "integer" or any(isinstance(v, int) for v in spec.get("enum", [])):
        try:
            return int(value)
        except ValueError:
            return value
    return value


def action_schema(hint: Suggestion, ctx: ToolContext, text: str = "") -> dict[str, Any]:
    """One candidate's arguments: those a suggestion gave fixed, the rest narrowed to the game."""
    tool = TOOLS[hint.tool]
    model = tool.args.model_json_schema()
    fields = model.get("properties", {})
    wanted = [f for f in fields if f in model.get("required", []) or f in hint.args or f in WORTH.get(tool.name, ())]
    if "currency" in hint.args:  # coin changes hands, not an item
        wanted = [f for f in wanted if f != "item"]
    properties: dict[str, Any] = {}
    for name in wanted:
        spec = _field(tool.name, name, ctx, hint, text.lower()) or _loosened(fields[name])
        if name in hint.args:
            spec = {"enum": [_typed(spec, hint.args[name])]}
        elif name == "amount" and (dice := potion_dice(ctx, text)):  # the SRD says what a potion heals
            spec = {"enum": [dice]}
        properties[name] = spec
    args = {"type": "object", "properties": properties, "required": wanted, "additionalProperties": False}
    return args


def plan_schema(hints: list[Suggestion], ctx: ToolContext, text: str = "") -> dict[str, Any]:
    """The reply step one must give: for each candidate in turn, its arguments when it happens, else null. (Each
    candidate once, so a small model cannot repeat a call until its tokens run out.)"""
    properties = {h.tool: {"anyOf": [{"type": "null"}, action_schema(h, ctx, text)]} for h in hints}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def potion_dice(ctx: ToolContext, text: str) -> str | None:
    """The healing of the potion the message names and the acting character carries (SRD 5.1), if any."""
    actor = ctx.state.characters.get(ctx.actor_id or "")
    words = text.lower()
    if actor is None or "potion" not in words:
        return None
    carried = [HEALING_POTIONS[i.name.lower()] for i in actor.inventory if i.name.lower() in HEALING_POTIONS]
    named = [dice for name, dice in HEALING_POTIONS.items() if name in words]
    return (named or carried or [None])[0]


# -- the prompt ------------------------------------------------------------------------------------------------------

def plan_request(turn: Turn, deps: Deps, hints: list[Suggestion], schema: dict[str, Any]) -> ModelRequest:
    assert turn.route is not None and turn.work is not None
    settings = deps.config.agent(turn.route.agent)
    options = "\n".join(f"- {h.tool}: {TOOLS[h.tool].description.split('. ')[0].rstrip('.')} ({h.reason})"
                        for h in hints)
    speaker = turn.work.characters.get(turn.author_id)
    who = speaker.name if speaker else turn.author_name
    user = (f"{situation(turn.work, turn.author_id)}\n\n{escape(who)} says: \"{escape(turn.text)}\"\n\n"
            f"Actions the engine can take now:\n{escape(options)}\n\n"
            "Answer with one JSON object: for each action above, its arguments if the message makes it happen now, "
            "or null if it does not.")
    return ModelRequest(agent=turn.route.agent, model=settings.model, system=prompts.DECIDE, context="",
                        messages=[ChatMessage("user", user)], temperature=0.0,
                        max_tokens=40 + 40 * len(hints), seed=turn.seed, tools=False,
                        schema=schema)


# -- the stage -------------------------------------------------------------------------------------------------------

_OBJECT = re.compile(r"\{.*\}", re.S)


def read_plan(reply: str, hints: list[Suggestion], schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The calls a reply decides, in the candidates' order: keys that are no candidate are ignored, and a call
    whose arguments break its schema is dropped (a hosted model is asked to follow it, not forced)."""
    found = _OBJECT.search(reply or "")
    if found is None:
        raise ValueError("no JSON object in the reply")
    data = json.loads(found.group())
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    out = []
    for h in hints:
        args = data.get(h.tool)
        if isinstance(args, dict):
            if conforms(args, schema["properties"][h.tool]["anyOf"][1]):
                out.append((h.tool, args))
            else:
                log.warning("plan_call_dropped", tool=h.tool, args=str(args)[:200])
    return out


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """Whether `value` follows `schema`, for the parts of JSON schema the plan uses: enum, type, pattern, minimum
    and maximum, properties with required and no others, anyOf."""
    if "anyOf" in schema:
        return any(conforms(value, s) for s in schema["anyOf"])
    if "enum" in schema:
        return any(value == e and type(value) is type(e) for e in schema["enum"])
    kind = schema.get("type")
    if kind == "null":
        return value is None
    if kind == "object":
        props = schema.get("properties", {})
        return (isinstance(value, dict) and set(value) <= set(props) and set(schema.get("required", [])) <= set(value)
                and all(conforms(v, props[k]) for k, v in value.items()))
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool) and schema.get("minimum", value) <= value
                <= schema.get("maximum", value))
    if kind == "string":
        return isinstance(value, str) and ("pattern" not in schema or re.search(schema["pattern"], value) is not None)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list) and all(conforms(v, schema.get("items", {})) for v in value)
    return kind is None  # a shape the plan does not narrow: the tool's own validation judges it


async def decide(turn: Turn, deps: Deps) -> None:
    """Step one of a two-step turn: the model decides, the engine acts; what it did goes into the agent's context."""
    if turn.route is None or turn.ctx is None or turn.request is None or turn.request.tools:
        return
    hints = candidates(turn, deps)
    if not hints:
        return
    schema = plan_schema(hints, turn.ctx, turn.text)
    request = plan_request(turn, deps, hints, schema)
    run = AgentRun()
    limits = Limits(tool_quota=1, max_rounds=1, generation_timeout=deps.config.turn.generation_timeout)
    try:
        await run_agent(deps.models[turn.route.agent], request, turn.ctx, limits, deps.sleep, run, tools=False)
        plan = read_plan(run.reply, hints, schema)
    except Exception as exc:  # a model failure or an unreadable plan: the turn goes on with nothing decided
        log.warning("plan_unreadable", channel_id=turn.session.channel_id, error=f"{type(exc).__name__}: {exc}"[:200],
                    reply=(run.reply or "")[:200])
        return
    finally:
        turn.grounding_calls.extend(run.model_calls)
    done: list[ToolCall] = []
    for name, args in plan[: deps.config.turn.tool_quota]:
        done.extend(await _act(name, args, turn.ctx))
    turn.grounding_tools.extend(done)
    log.info("plan_done", channel_id=turn.session.channel_id, tools=[c.name for c in done if c.ok])
    if done:
        lines = [f"- {c.observation}" if c.ok else f"- Did NOT happen ({c.name}): {c.observation}" for c in done]
        told = f"{HEADING}\n" + escape("\n".join(lines))
        turn.request = replace(turn.request, context="\n\n".join(filter(None, [turn.request.context, told])))


async def _act(name: str, args: dict[str, Any], ctx: ToolContext) -> list[ToolCall]:
    """Run one decided call; hit points given as dice are rolled first, by the engine, and the roll is kept."""
    calls: list[ToolCall] = []
    amount = args.get("amount")
    if isinstance(amount, str) and "d" in amount:
        actor = ctx.state.characters.get(ctx.actor_id or "")
        whose = args.get("target") or (actor.name if actor else "")
        reason = f"{whose}'s {args.get('kind', 'damage')}" if whose else str(args.get("kind", "damage"))
        rolled = await arun_args("roll", {"expression": amount, "reason": reason}, ctx)
        calls.append(rolled)
        if not rolled.ok:
            return calls
        args = {**args, "amount": max(1, int(rolled.meta.get("total", 1)))}
    elif isinstance(amount, str) and amount.isdigit():
        args = {**args, "amount": int(amount)}
    calls.append(await arun_args(name, args, ctx))
    return calls
