"""A new world from a premise ("a haunted mining town in the mountains"): the world-builder agent writes it as
data, the engine makes it an adventure file, the adventure checker judges it, and it is saved under
corpus/adventures/<id>/ to be edited, checked and played again.

Two calls, each held to a JSON schema (a llama.cpp grammar for the local model, `response_format` for
OpenAI-compatible servers, a forced tool's input schema for Anthropic): first the places (where the party starts,
then 3 to 6 more), then the people, the hook quest, the fights and a shop, whose schema lists the places of the first
answer and the SRD's creatures as the only values allowed, so a reference cannot point nowhere. The engine joins
the places (a tree from the start, every way both ways), makes ids, ties each person's secret to them, and checks
the whole as `lorekeeper adventure check` would; problems are sent back once for repair, then refused in a sentence
with nothing saved."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import structlog
import yaml
from pydantic import BeforeValidator, Field, ValidationError

from .basics import AgentType, Model, slug
from .bestiary import bestiary
from .content import Adventure, list_adventures, references
from .deps import Deps
from .errors import GameError
from .instructions import system_prompt
from .models import ChatMessage, ModelRequest
from .tools.making import ascii_id

log = structlog.get_logger(__name__)

MAX_PREMISE = 300
SCHEMA_TEXT = 300  # the longest text a schema asks for (longer fields are cut to their own bound when read)
FOE_CRS = {"0", "1/8", "1/4", "1/2", "1", "2"}  # what a party of 1st to 3rd level can meet
SKILLS = ("investigation", "perception", "insight", "arcana", "survival", "religion", "history")


class WorldError(GameError):
    pass


def Clip(most: int, least: int = 1) -> Any:  # noqa: N802 (a type)
    """Text of `least` to `most` characters; a longer answer is cut, not refused (a small model runs on), and the
    schema the model is held to says no length at all (llama.cpp's grammar for a long maxLength is too big)."""
    return Annotated[str, BeforeValidator(lambda v: " ".join(v.split())[:most] if isinstance(v, str) else v),
                     Field(min_length=least, max_length=most)]


class Place(Model):
    name: Clip(60, 2)
    description: Clip(700, 3)
    secret: Clip(300, 0) = ""  # something hidden here, found by a check
    skill: Literal[SKILLS] = "investigation"  # type: ignore[valid-type]


class Outline(Model):
    title: Clip(80, 3)
    summary: Clip(400, 3)
    intro: Clip(1200, 3)
    places: list[Place] = Field(min_length=4, max_length=7)  # the first is where the party starts


class Person(Model):
    name: Clip(60, 2)
    role: Clip(80, 2)
    place: Clip(60, 1)
    attitude: Literal["friendly", "neutral", "wary", "hostile"] = "neutral"
    persona: Clip(700, 3)  # who they are, how they speak, what they want
    secret: Clip(300, 3)  # what they know that the party would like to


class Hook(Model):
    title: Clip(80, 3)
    giver: Clip(60, 2)
    description: Clip(500, 3)
    objectives: list[Clip(200, 3)] = Field(min_length=2, max_length=4)
    reward: Clip(200, 0) = ""


class Foes(Model):
    monster: Clip(60, 2)
    # A grammar holds no numeric bound: a count out of range is brought into it, not refused.
    count: Annotated[int, BeforeValidator(lambda v: max(1, min(4, v)) if isinstance(v, int) else v)] = Field(1, ge=1, le=4)


class Fight(Model):
    name: Clip(80, 3)
    place: Clip(60, 1)
    foes: list[Foes] = Field(min_length=1, max_length=2)


class Ware(Model):
    name: Clip(60, 2)
    price_gp: Annotated[int, BeforeValidator(lambda v: max(1, min(500, v)) if isinstance(v, int) else v)] = Field(ge=1, le=500)
    description: Clip(200, 0) = ""


class Store(Model):
    name: Clip(60, 2)
    place: Clip(60, 1)
    keeper: Clip(60, 2)
    wares: list[Ware] = Field(min_length=3, max_length=8)


class Cast(Model):
    people: list[Person] = Field(min_length=4, max_length=8)
    quest: Hook
    fights: list[Fight] = Field(min_length=1, max_length=2)
    shop: Store


def _schema(model: type[Model], enums: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The model's JSON schema with references inlined (grammars and some servers read no $defs) and the fields
    named in `enums` ("Person.place") held to the listed values."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any, owner: str) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[1]
                return inline(defs[name], name)
            out = {k: inline(v, owner) for k, v in node.items()
                   if not (k == "title" and isinstance(v, str))}  # a schema's label, not a property called title
            if "maxLength" in out:  # llama.cpp cannot build a grammar for texts of many hundreds (it crashes)
                out["maxLength"] = min(out["maxLength"], SCHEMA_TEXT)
            for field, values in (enums or {}).items():
                model_name, _, prop = field.partition(".")
                if model_name == owner and prop in out.get("properties", {}):
                    out["properties"][prop] = {"type": "string", "enum": values}
            return out
        if isinstance(node, list):
            return [inline(v, owner) for v in node]
        return node

    return inline(schema, model.__name__)


def foe_names() -> list[str]:
    return sorted(m.name for m in bestiary().values() if m.cr in FOE_CRS)


async def _ask(deps: Deps, user: str, model: type[Model], schema: dict[str, Any],
               history: list[ChatMessage] | None = None) -> tuple[Any, str]:
    """One call held to `schema`: the parsed answer (or None) and its text."""
    settings = deps.config.agent(AgentType.WORLDBUILDER)
    messages = (history or []) + [ChatMessage("user", user)]
    request = ModelRequest(agent=AgentType.WORLDBUILDER, model=settings.model,
                           system=system_prompt(AgentType.WORLDBUILDER), context="", messages=messages,
                           temperature=settings.temperature, max_tokens=settings.max_tokens, tools=False,
                           schema=schema)
    text = ""
    async for item in deps.models[AgentType.WORLDBUILDER].stream(request):
        if isinstance(item, str):
            text += item
    found = re.search(r"\{.*\}", text, re.S)
    try:
        # strict=False: a newline written raw inside a string (a small model does) is read as one
        return model.model_validate(json.loads(found.group(), strict=False)) if found else None, text
    except (ValueError, ValidationError) as exc:
        log.info("worldgen_unreadable", model=model.__name__, error=str(exc)[:300])
        return _problems_of(exc), text


def _problems_of(exc: Exception) -> list[str]:
    if isinstance(exc, ValidationError):
        return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:8]]
    return [f"not JSON: {exc}"]


async def _answer(deps: Deps, user: str, model: type[Model], schema: dict[str, Any], what: str) -> Any:
    """The answer, with one repair round when it does not fit."""
    answer, text = await _ask(deps, user, model, schema)
    if isinstance(answer, model):
        return answer
    problems = answer if isinstance(answer, list) else ["no JSON object in the reply"]
    repaired, _ = await _ask(deps, "That answer has problems:\n- " + "\n- ".join(problems) +
                             "\nWrite the whole JSON object again, fixed.", model, schema,
                             [ChatMessage("user", user), ChatMessage("assistant", text[:6000])])
    if isinstance(repaired, model):
        return repaired
    raise WorldError(f"The world-builder could not write {what} that fits ({'; '.join(problems[:3])}). "
                     "Try again, or with another premise.")


def _named(name: str, ids: dict[str, str]) -> str | None:
    """The id of the place or person called `name` (case and spacing ignored), else None."""
    key = slug(name)
    return next((i for n, i in ids.items() if slug(n) == key), None)


def assemble(premise: str, outline: Outline, cast: Cast, taken: set[str]) -> tuple[dict[str, Any], list[str]]:
    """The adventure as data, and what in the answers did not fit together (for the repair round)."""
    problems: list[str] = []
    adventure_id = _unique(ascii_id(outline.title)[:40] or "new-world", taken)
    used: set[str] = set()
    _distinct_places(outline)
    cast = _distinct_people(cast)
    order = [_unique(ascii_id(place.name) or "place", used) for place in outline.places]
    place_ids: dict[str, str] = {}
    for place, pid in zip(outline.places, order):
        place_ids.setdefault(place.name, pid)  # two places of one name: the name finds the first
    exits: dict[str, list[str]] = {pid: [] for pid in order}
    for n, pid in enumerate(order[1:], 1):  # a tree from the start: every place reachable, every way both ways
        parent = order[(n - 1) // 2]
        exits[parent].append(pid)
        exits[pid].append(parent)
    locations = []
    for place, pid in zip(outline.places, order):
        entry: dict[str, Any] = {"id": pid, "name": place.name.strip(), "description": place.description.strip(),
                                 "exits": [{"to": to} for to in exits[pid]], "secrets": []}
        if place.secret.strip():
            entry["secrets"].append({"id": f"{pid}-secret", "text": place.secret.strip(), "skill": place.skill, "dc": 12})
        locations.append(entry)
    by_id = {loc["id"]: loc for loc in locations}
    npc_ids: dict[str, str] = {}
    npcs: list[dict[str, Any]] = []
    for person in cast.people:
        where = _named(person.place, place_ids)
        if where is None:
            problems.append(f"{person.name} is at '{person.place}', which is none of the places")
            where = order[0]
        nid = _unique(ascii_id(person.name) or "person", used)
        npc_ids.setdefault(person.name, nid)
        secret_id = f"{nid}-secret"
        by_id[where]["secrets"].append({"id": secret_id, "text": f"{person.name} knows: {person.secret.strip()}",
                                        "skill": "insight", "dc": 13})
        npcs.append({"id": nid, "name": person.name.strip(), "role": person.role.strip()[:80], "location": where,
                     "attitude": person.attitude, "knows_secrets": [secret_id],
                     "persona": f"You are {person.name.strip()}, {person.role.strip()}. {person.persona.strip()}"})
    # The giver names one of the people; a name that is none of them (a small model's slip) makes it the first.
    giver = _named(cast.quest.giver, npc_ids) or npcs[0]["id"]
    quests = [{"id": ascii_id(cast.quest.title) or "hook", "title": cast.quest.title.strip(), "giver": giver,
               "description": cast.quest.description.strip(), "reward": cast.quest.reward.strip(),
               "objectives": [{"id": f"step-{n}", "text": text.strip()} for n, text in enumerate(cast.quest.objectives, 1)]}]
    known = {slug(n) for n in foe_names()}
    encounters = []
    for fight in cast.fights:
        where = _named(fight.place, place_ids)
        if where is None:
            problems.append(f"the fight '{fight.name}' is at '{fight.place}', which is none of the places")
            where = order[-1]
        foes = []
        for f in fight.foes:
            if slug(f.monster) not in known:
                problems.append(f"'{f.monster}' is not one of the SRD creatures offered")
                continue
            foes.append({"monster": f.monster, "count": f.count})
        if foes:
            encounters.append({"id": _unique(ascii_id(fight.name) or "fight", used), "name": fight.name.strip(),
                               "location": where, "enemies": foes})
    shop = cast.shop
    where = _named(shop.place, place_ids)
    keeper = _named(shop.keeper, npc_ids)
    if where is None:
        problems.append(f"the shop is at '{shop.place}', which is none of the places")
        where = order[0]
    if keeper is None:  # a keeper who is none of the people joins them, behind the counter
        keeper = _unique(ascii_id(shop.keeper) or "shopkeeper", used)
        npcs.append({"id": keeper, "name": shop.keeper.strip(), "role": "shopkeeper", "location": where,
                     "attitude": "friendly", "persona": f"You are {shop.keeper.strip()}, who keeps {shop.name.strip()}."})
    items, stock = [], []
    item_ids: set[str] = set()
    for ware in shop.wares:
        iid = _unique(ascii_id(ware.name) or "item", item_ids)
        items.append({"id": iid, "name": ware.name.strip(), "price": f"{ware.price_gp} gp",
                      "description": ware.description.strip()})
        stock.append({"item": iid})
    shops = [{"id": _unique(ascii_id(shop.name) or "shop", used), "name": shop.name.strip(), "location": where,
              "keeper": keeper, "stock": stock}]
    data = {"id": adventure_id, "title": outline.title.strip(), "summary": outline.summary.strip(),
            "levels": "1-3", "intro": outline.intro.strip(), "start_location": order[0], "locations": locations,
            "npcs": npcs, "quests": quests, "encounters": encounters, "items": items, "shops": shops}
    if not encounters:
        problems.append("no fight has a creature from the SRD list")
    try:
        Adventure.model_validate(data)
    except ValidationError as exc:
        problems += _problems_of(exc)
    problems += references(data)
    return data, problems


def _distinct_places(outline: Outline) -> None:
    """Places of one name are told apart by number (a small model names several alike): "Old Mill (2)"."""
    seen: dict[str, int] = {}
    for place in outline.places:
        key = slug(place.name)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            place.name = f"{place.name[:54]} ({seen[key]})"


def _distinct_people(cast: Cast) -> Cast:
    """One person a name: a second of the same name is the first again, and left out."""
    seen: set[str] = set()
    people = []
    for person in cast.people:
        if slug(person.name) not in seen:
            seen.add(slug(person.name))
            people.append(person)
    return cast.model_copy(update={"people": people})


def _unique(base: str, taken: set[str]) -> str:
    ident, n = base, 2
    while ident in taken:
        ident, n = f"{base}-{n}", n + 1
    taken.add(ident)
    return ident


def _outline_prompt(premise: str) -> str:
    return (f"Premise: {premise}\n\nWrite the places of a short adventure for a party of 1st to 3rd level: its title, "
            "a one-line summary, an intro read to the players (what they see as they arrive), and 4 to 7 places, the "
            "first being where the party starts; each with a vivid description and, for most, a secret hidden there "
            "and the skill that finds it. Answer with the JSON object only.")


def _cast_prompt(premise: str, outline: Outline) -> str:
    places = "\n".join(f"- {p.name}: {p.description[:160]}" for p in outline.places)
    return (f"Premise: {premise}\nTitle: {outline.title}\nPlaces:\n{places}\n\nNow the people and trouble of this "
            "world: 4 to 8 people (name, role, which place they are at, attitude, who they are and how they speak, "
            "and one secret each); a hook quest given by one of those people, with 2 to 4 objectives and a reward; "
            "1 or 2 fights at those places with creatures from the list; and one shop at a place, kept by one of the "
            "people, with 3 to 8 wares and their prices in gold. Use the places' names exactly. Answer with the JSON "
            "object only.")


async def build(deps: Deps, premise: str) -> Adventure:
    """Make, check and save a world from `premise`; the saved adventure (WorldError, nothing saved, when it fails)."""
    premise = " ".join(premise.split())
    if not 3 <= len(premise) <= MAX_PREMISE:
        raise WorldError(f"A premise is a sentence of 3 to {MAX_PREMISE} characters, e.g. "
                         "\"a haunted mining town in the mountains\".")
    outline: Outline = await _answer(deps, _outline_prompt(premise), Outline, _schema(Outline), "the places")
    names = [p.name for p in outline.places]
    enums = {"Person.place": names, "Fight.place": names, "Store.place": names, "Foes.monster": foe_names()}
    schema = _schema(Cast, enums)
    user = _cast_prompt(premise, outline)
    cast: Cast = await _answer(deps, user, Cast, schema, "the people and fights")
    taken = set(list_adventures(deps.corpus_dir))
    data, problems = assemble(premise, outline, cast, set(taken))
    if problems:  # sent back once: the same call, with what did not fit
        log.info("worldgen_repair", problems=problems[:8])
        fixed, _ = await _ask(deps, "These parts do not fit together:\n- " + "\n- ".join(problems[:8]) +
                              "\nWrite the whole JSON object again, fixed: use the places' and people's names exactly.",
                              Cast, schema, [ChatMessage("user", user), ChatMessage("assistant", cast.model_dump_json())])
        if isinstance(fixed, Cast):
            data, problems = assemble(premise, outline, fixed, set(taken))
    if problems:
        raise WorldError("The world-builder's world does not hold together (" + "; ".join(problems[:3]) +
                         "). Nothing was saved; try again, or with another premise.")
    return save(deps.corpus_dir, data, premise)


def save(corpus_dir: Path, data: dict[str, Any], premise: str) -> Adventure:
    base, n = data["id"], 2
    while True:  # another world made meanwhile may have taken the id: the next free one
        folder = corpus_dir / "adventures" / data["id"]
        try:
            folder.mkdir(parents=True, exist_ok=False)
            break
        except FileExistsError:
            data["id"], n = f"{base}-{n}", n + 1
    head = (f"# Made by Lorekeeper's world-builder from the premise: {premise}\n"
            "# Edit it freely; `lorekeeper adventure check` checks it.\n")
    (folder / "adventure.yaml").write_text(head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110),
                                           encoding="utf-8")
    adventure = Adventure.model_validate(data)
    log.info("world_made", adventure=adventure.id, places=len(adventure.locations), npcs=len(adventure.npcs))
    return adventure
