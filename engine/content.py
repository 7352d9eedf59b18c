"""Adventures: YAML files under corpus/adventures that seed a new game's state."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError

from .errors import ConfigError, GameError
from .state import NPC, Encounter, GameState, Location, Model, Party, Quest


class Adventure(Model):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    world: str | None = Field(None, pattern=r"^[a-z0-9][a-z0-9-]*$")  # corpus/world/<world>/ holds its world lore
    summary: str = ""
    intro: str
    start_location: str
    locations: list[Location] = Field(min_length=1)
    npcs: list[NPC] = Field(default_factory=list)
    quests: list[Quest] = Field(default_factory=list)
    encounters: list[Encounter] = Field(default_factory=list)

    def check_references(self) -> list[str]:
        """Every broken cross-reference, as a sentence naming both ends."""
        problems: list[str] = []
        for kind, items in (("location", self.locations), ("npc", self.npcs), ("quest", self.quests), ("encounter", self.encounters)):
            seen: set[str] = set()
            for item in items:
                if item.id in seen:
                    problems.append(f"{kind} id '{item.id}' is used twice")
                seen.add(item.id)
        locations = {loc.id: loc for loc in self.locations}
        secrets = {s.id for loc in self.locations for s in loc.secrets}
        if self.start_location not in locations:
            problems.append(f"start_location '{self.start_location}' is not a location")
        for loc in self.locations:
            for exit_ in loc.exits:
                if exit_.to not in locations:
                    problems.append(f"location '{loc.id}' has an exit to unknown location '{exit_.to}'")
                if exit_.requires and loc.secret(exit_.requires) is None and exit_.requires not in loc.flags:
                    problems.append(f"exit '{loc.id}' -> '{exit_.to}' requires '{exit_.requires}', which is neither a secret nor a flag of '{loc.id}'")
        npc_ids = {n.id for n in self.npcs}
        for npc in self.npcs:
            if npc.location is not None and npc.location not in locations:
                problems.append(f"npc '{npc.id}' is at unknown location '{npc.location}'")
            for sid in npc.knows_secrets:
                if sid not in secrets:
                    problems.append(f"npc '{npc.id}' knows unknown secret '{sid}'")
        for quest in self.quests:
            if quest.giver is not None and quest.giver not in npc_ids:
                problems.append(f"quest '{quest.id}' is given by unknown npc '{quest.giver}'")
        for enc in self.encounters:
            if enc.location not in locations:
                problems.append(f"encounter '{enc.id}' is at unknown location '{enc.location}'")
        return problems

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
        )


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
    if not isinstance(raw, dict):
        raise ConfigError(f"The {what} {path} must hold a mapping at the top level.")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"The {what} {path} is invalid:\n{describe_validation(exc)}") from exc


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
    adventure = load_yaml_model(path, Adventure, "adventure file")
    problems = adventure.check_references()
    if problems:
        raise ConfigError(f"The adventure file {path} has broken references:\n" + "\n".join(f"- {p}" for p in problems))
    if version is not None:
        _ADVENTURES[path] = (version, adventure)
    return adventure


def describe_validation(exc: ValidationError) -> str:
    """Pydantic's errors as short lines: where, then what."""
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")  # a validator's own sentence needs no prefix
        lines.append(f"- {where}: {msg}")
    return "\n".join(lines)


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


def find_adventure(corpus_dir: Path, adventure_id: str | None) -> Adventure:
    found = list_adventures(corpus_dir)
    if not found:
        raise ConfigError(f"No adventures found under {corpus_dir / 'adventures'}.")
    if adventure_id is None:
        adventure_id = next(iter(found))
    path = found.get(adventure_id)
    if path is None:
        raise ConfigError(f"No adventure called '{adventure_id}'. Available: {', '.join(found)}.")
    adventure = load_adventure(path)
    if adventure.id != adventure_id:
        raise ConfigError(f"Adventure file {path} declares id '{adventure.id}' but lives in folder '{adventure_id}'.")
    return adventure
