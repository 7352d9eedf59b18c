"""Adventures: YAML files under corpus/adventures that seed a new game's state."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError

from .errors import ConfigError, GameError
from .rules import SKILLS, ability_of
from .basics import Model
from .entities import NPC, Encounter, ItemInfo, Location, Quest, Shop
from .state import GameState, Party
from .validation import describe_validation, problems


class Adventure(Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    world: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9-]*$")  # corpus/world/<world>/ holds its world lore
    summary: str = ""
    levels: str | None = Field(None, pattern=r"^([1-9]|1[0-9]|20)(-([1-9]|1[0-9]|20))?$")  # "3-5": for whom it is
    intro: str
    start_location: str
    locations: list[Location] = Field(min_length=1)
    npcs: list[NPC] = Field(default_factory=list)
    quests: list[Quest] = Field(default_factory=list)
    encounters: list[Encounter] = Field(default_factory=list)
    items: list[ItemInfo] = Field(default_factory=list)
    shops: list[Shop] = Field(default_factory=list)

    @property
    def lowest_level(self) -> int:
        """The level its characters should have at least (1 when it does not say)."""
        return int(self.levels.split("-")[0]) if self.levels else 1

    def check_references(self) -> list[str]:
        """Every broken cross-reference, as a sentence naming both ends."""
        return references(self.model_dump())

    def new_game(self, seed: int) -> GameState:
        return GameState(
            adventure_id=self.id,
            title=self.title,
            world=self.world,
            seed=seed,
            current_location=self.start_location,
            party=Party(),
            npcs={n.id: n.model_copy(deep=True) for n in self.npcs},
            locations={loc.id: loc.model_copy(deep=True) for loc in self.locations},
            quests={q.id: q.model_copy(deep=True) for q in self.quests},
            encounters={e.id: e.model_copy(deep=True) for e in self.encounters},
            items={i.id: i.model_copy(deep=True) for i in self.items},
            shops={s.id: s.model_copy(deep=True) for s in self.shops},
        )


def references(raw: dict[str, Any]) -> list[str]:
    """Every broken cross-reference of an adventure's data (also of data that failed validation elsewhere, so one
    pass reports everything), as a sentence naming both ends."""
    def items(key: str) -> list[dict[str, Any]]:
        found = raw.get(key)
        return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []

    def ids(key: str) -> set[str]:
        return {i["id"] for i in items(key) if isinstance(i.get("id"), str)}

    problems: list[str] = []
    for kind, key in (("location", "locations"), ("npc", "npcs"), ("quest", "quests"), ("encounter", "encounters"),
                      ("item", "items"), ("shop", "shops")):
        seen: set[str] = set()
        for item in items(key):
            ident = item.get("id")
            if isinstance(ident, str) and ident in seen:
                problems.append(f"{kind} id '{ident}' is used twice")
            seen.add(ident) if isinstance(ident, str) else None
    locations = ids("locations")
    secrets = {s.get("id") for loc in items("locations") for s in _listed(loc, "secrets") if isinstance(s, dict)}
    start = raw.get("start_location")
    if isinstance(start, str) and start not in locations:
        problems.append(f"start_location '{start}' is not a location" + _suggest(start, locations))
    known_items = ids("items")
    for loc in items("locations"):
        for lying in _listed(loc, "items"):
            if isinstance(lying, str) and lying not in known_items:
                problems.append(f"location '{loc.get('id')}' has unknown item '{lying}' lying there"
                                + _suggest(lying, known_items))
        own = {s.get("id") for s in _listed(loc, "secrets") if isinstance(s, dict)}
        flags = loc.get("flags") if isinstance(loc.get("flags"), dict) else {}
        for exit_ in [e for e in _listed(loc, "exits") if isinstance(e, dict)]:
            to, needs = exit_.get("to"), exit_.get("requires")
            if isinstance(to, str) and to not in locations:
                problems.append(f"location '{loc.get('id')}' has an exit to unknown location '{to}'" + _suggest(to, locations))
            if isinstance(needs, str) and needs not in own and needs not in flags:
                problems.append(f"exit '{loc.get('id')}' -> '{to}' requires '{needs}', which is neither a secret nor a "
                                f"flag of '{loc.get('id')}'")
    npcs = ids("npcs")
    for npc in items("npcs"):
        where = npc.get("location")
        if isinstance(where, str) and where not in locations:
            problems.append(f"npc '{npc.get('id')}' is at unknown location '{where}'" + _suggest(where, locations))
        for sid in _listed(npc, "knows_secrets"):
            if isinstance(sid, str) and sid not in secrets:
                problems.append(f"npc '{npc.get('id')}' knows unknown secret '{sid}'")
    for quest in items("quests"):
        giver = quest.get("giver")
        if isinstance(giver, str) and giver not in npcs:
            problems.append(f"quest '{quest.get('id')}' is given by unknown npc '{giver}'" + _suggest(giver, npcs))
    for enc in items("encounters"):
        where = enc.get("location")
        if isinstance(where, str) and where not in locations:
            problems.append(f"encounter '{enc.get('id')}' is at unknown location '{where}'" + _suggest(where, locations))
        for npc_id in _listed(enc, "npcs"):
            if isinstance(npc_id, str) and npc_id not in npcs:
                problems.append(f"encounter '{enc.get('id')}' has unknown npc '{npc_id}' among its foes" + _suggest(npc_id, npcs))
    return problems + _goods_problems(raw, items, locations, npcs) + _obstacle_problems(items("locations"))


def _listed(holder: dict[str, Any], key: str) -> list[Any]:
    """`holder[key]` when it is a list, else nothing: a mistyped one (`secrets: 5`) is validation's to report, and
    these cross-reference checks run first."""
    value = holder.get(key)
    return value if isinstance(value, list) else []


def _goods_problems(raw: dict[str, Any], items: Any, locations: set[str], npcs: set[str]) -> list[str]:
    """Shops and loot: each names items, places and keepers that exist, and every thing a shop sells has a price."""
    catalog = {i["id"]: i for i in items("items") if isinstance(i.get("id"), str)}
    problems: list[str] = []
    for shop in items("shops"):
        sid, where, keeper = shop.get("id"), shop.get("location"), shop.get("keeper")
        if isinstance(where, str) and where not in locations:
            problems.append(f"shop '{sid}' is at unknown location '{where}'" + _suggest(where, locations))
        if isinstance(keeper, str) and keeper not in npcs:
            problems.append(f"shop '{sid}' is kept by unknown npc '{keeper}'" + _suggest(keeper, npcs))
        seen: set[str] = set()
        for entry in [e for e in _listed(shop, "stock") if isinstance(e, dict)]:
            ref = entry.get("item")
            if not isinstance(ref, str):
                continue
            if ref in seen:
                problems.append(f"shop '{sid}' lists item '{ref}' twice")
            seen.add(ref)
            if ref not in catalog:
                problems.append(f"shop '{sid}' sells unknown item '{ref}'" + _suggest(ref, set(catalog)))
            elif entry.get("price") is None and catalog[ref].get("price") is None:
                problems.append(f"shop '{sid}' sells item '{ref}' without a price: give it one here or in items")
    holders = [(f"encounter '{e.get('id')}'", e) for e in items("encounters")]
    holders += [(f"secret '{s.get('id')}'", s) for loc in items("locations") for s in _listed(loc, "secrets")
                if isinstance(s, dict)]
    for who, holder in holders:
        loot = holder.get("loot")
        for entry in _listed(loot, "items") if isinstance(loot, dict) else []:
            ref = entry.get("item") if isinstance(entry, dict) else None
            if isinstance(ref, str) and ref not in catalog:
                problems.append(f"the loot of {who} names unknown item '{ref}'" + _suggest(ref, set(catalog)))
    return problems


def _obstacle_problems(locations: list[dict[str, Any]]) -> list[str]:
    """A check's skill must be a skill or an ability, and an exit with a DC must have something that closes it."""
    problems: list[str] = []
    for loc in locations:
        lid = loc.get("id")
        things = [(f"secret '{s.get('id')}' of '{lid}'", s) for s in _listed(loc, "secrets") if isinstance(s, dict)]
        things += [(f"exit '{lid}' -> '{e.get('to')}'", e) for e in _listed(loc, "exits") if isinstance(e, dict)]
        for what, thing in things:
            skill = thing.get("skill")
            if isinstance(skill, str) and " ".join(skill.lower().split()) not in SKILLS and ability_of(skill) is None:
                problems.append(f"{what} has skill '{skill}', which is neither a skill nor an ability"
                                + _suggest(skill.lower(), set(SKILLS)))
            if "to" in thing and thing.get("dc") is not None and thing.get("requires") is None:
                problems.append(f"{what} has a dc but nothing closes it: give it 'requires' (a flag or a secret)")
    return problems


def _suggest(name: str, known: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def check_adventure(path: Path) -> list[str]:
    """Every problem of an adventure file, found in one pass: its YAML, each field (named by ids), and each
    cross-reference. Empty: the file is good."""
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except OSError as exc:
        return [f"cannot be read: {exc.strerror}"]
    except UnicodeDecodeError as exc:
        return [f"is not UTF-8 text ({exc.reason} at byte {exc.start})"]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return [f"{where}not valid YAML ({getattr(exc, 'problem', None) or exc})"]
    except (ValueError, RecursionError) as exc:  # a number of thousands of digits; nesting deeper than Python goes
        return [_unreadable(exc)]
    if not isinstance(raw, dict):
        return ["must hold a mapping (name: value lines) at the top level"]
    try:
        Adventure.model_validate(raw)
        found = []
    except ValidationError as exc:
        found = problems(exc, raw, Adventure)
    return found + references(raw)


def _unreadable(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nests lists or mappings deeper than can be read"
    return f"holds a number too long to read ({str(exc).split(':', 1)[0].lower()})"


M = TypeVar("M", bound=BaseModel)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it: ~10× faster


def load_yaml_model(path: Path, model: type[M], what: str) -> M:
    """A YAML file read into a pydantic model; every problem is a ConfigError naming the file."""
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
    except OSError as exc:
        raise ConfigError(f"Cannot read the {what} {path}: {exc.strerror}.") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"The {what} {path} is not valid YAML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"The {what} {path} is not UTF-8 text ({exc.reason} at byte {exc.start}).") from exc
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"The {what} {path} {_unreadable(exc)}.") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"The {what} {path} must hold a mapping at the top level.")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"The {what} {path} is invalid:\n{describe_validation(exc, raw, model)}") from exc


_ADVENTURES: dict[Path, tuple[tuple[int, int], Adventure]] = {}


def load_adventure(path: Path) -> Adventure:
    """Read and check one adventure file; every problem is reported with the file's name. A file read before
    and unchanged since (same size and modification time) is not parsed again; callers must not change the
    result (`new_game` copies what a game may change)."""
    try:
        stat = path.stat()
        version = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = None
    cached = _ADVENTURES.get(path)
    if cached is not None and version is not None and cached[0] == version:
        return cached[1]
    found = check_adventure(path)
    if found:
        raise ConfigError(f"The adventure file {path} has {len(found)} problem{'s' if len(found) > 1 else ''} "
                          f"(`lorekeeper adventure check {path}` lists them again):\n" + "\n".join(f"- {p}" for p in found))
    adventure = load_yaml_model(path, Adventure, "adventure file")
    if version is not None:
        _ADVENTURES[path] = (version, adventure)
    return adventure


def list_adventures(corpus_dir: Path) -> dict[str, Path]:
    """Adventure ids mapped to their files, found as corpus/adventures/<id>/adventure.yaml."""
    root = corpus_dir / "adventures"
    if not root.is_dir():
        return {}
    return {p.parent.name: p for p in sorted(root.glob("*/adventure.yaml"))}


_TITLES: dict[tuple[Path, int], str] = {}


def adventure_titles(corpus_dir: Path) -> dict[str, str]:
    """Adventure ids mapped to their titles (read once per version of each file; a broken file says so)."""
    titles = {}
    for adventure_id, path in list_adventures(corpus_dir).items():
        try:
            key = (path, path.stat().st_mtime_ns)
        except OSError:
            continue
        if key not in _TITLES:
            try:
                _TITLES[key] = load_adventure(path).title
            except GameError:
                _TITLES[key] = f"{adventure_id} (has problems: /gm-admin reload-corpus says which)"
        titles[adventure_id] = _TITLES[key]
    return titles


def _lowest_level(path: Path) -> int:
    try:
        return load_adventure(path).lowest_level
    except GameError:
        return 99  # a broken file is never the default; naming it still says what is wrong


def find_adventure(corpus_dir: Path, adventure_id: str | None) -> Adventure:
    found = list_adventures(corpus_dir)
    if not found:
        raise ConfigError(f"No adventures found under {corpus_dir / 'adventures'}.")
    if adventure_id is None:  # the one for the newest characters (the starter), then by id
        adventure_id = min(found, key=lambda a: (_lowest_level(found[a]), a))
    path = found.get(adventure_id)
    if path is None:
        raise ConfigError(f"No adventure called '{adventure_id}'. Available: {', '.join(found)}.")
    adventure = load_adventure(path)
    if adventure.id != adventure_id:
        raise ConfigError(f"Adventure file {path} declares id '{adventure.id}' but lives in folder '{adventure_id}'.")
    return adventure
