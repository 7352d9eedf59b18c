"""The engine's config file: model, temperature and max_tokens per agent, and the turn's limits."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from .agents import AGENTS
from .errors import ConfigError
from .basics import AgentType, Model
from .validation import describe_validation

DEFAULT_CONFIG = Path(__file__).with_name("lorekeeper.toml")


class AgentSettings(Model):
    provider: str = "auto"  # auto, anthropic, openai, local, or scripted
    model: str = ""  # empty: the provider's default
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    max_tokens: int = Field(1024, ge=16, le=32_000)
    enabled: bool | None = None  # the grounding agents (referee, planner, persona) can be switched off; None: default
    debug: bool | None = None  # ask this agent for its tool feedback where a channel has not decided; None: [turn]'s
    # The two-step turn (engine/decide.py): the tool calls are decided first as data, then narrated without tools.
    # For models too small to write tool tags; None: on for the local model only.
    two_step: bool | None = None


class TurnSettings(Model):
    tool_quota: int = Field(8, ge=1, le=50)
    max_rounds: int = Field(10, ge=1, le=60)
    history_messages: int = Field(30, ge=2, le=500)
    summarize_after: int = Field(60, ge=10, le=5_000)
    summary_keep: int = Field(20, ge=2, le=500)
    summary_batch: int = Field(40, ge=2, le=500)  # messages folded into the summary by one model call, at most
    max_action_chars: int = Field(2000, ge=50, le=20_000)
    suggestions: bool = True  # the pre-flight tool suggestor adds hints to each agent's context
    suggestion_limit: int = Field(3, ge=1, le=10)  # hints a turn gets at most (the most confident first)
    generation_timeout: float = Field(180.0, ge=5, le=3600)  # seconds one model generation may take in all
    # Post-flight verification of the story against the tools: off, flag (record misses) or correct (one
    # corrective continuation asks the agent to make the missing call or revise its narration).
    verify: Literal["off", "flag", "correct"] = "flag"
    debug: bool = False  # debug mode (tool feedback) where neither the action, the channel nor the agent decides


class LoreSettings(Model):
    enabled: bool = True  # passages from the lore index enter each turn's context (when an index exists)
    passages: int = Field(4, ge=1, le=12)  # at most this many passages a turn
    min_similarity: float = Field(0.3, ge=0, le=1)  # a passage this close to the query (cosine) counts as relevant
    min_bm25: float = Field(4.0, ge=0)  # or one whose keyword score reaches this
    passage_tokens: int = Field(220, ge=40, le=2000)  # each passage is cut (at a sentence) to about this many tokens
    sources: bool = True  # players see a "Sources" line under replies that cite lore (channels may switch it)
    max_calls_per_turn: int = Field(2, ge=0, le=20)  # get_lore_slice / search_lore calls a turn may make
    max_return_tokens: int = Field(350, ge=80, le=4000)  # a slice is compacted to at most this many tokens
    min_tokens: int = Field(80, ge=20, le=1000)  # and never below this many
    cache_ttl_s: int = Field(3600, ge=0, le=86_400)
    turn_token_budget: int = Field(1500, ge=100, le=20_000)  # lore tokens one turn may take in all
    recall: int = Field(2, ge=0, le=10)  # exchanges from earlier in the game recalled into the context (0: off)
    recall_min_similarity: float = Field(0.45, ge=0, le=1)  # how close an old exchange must be to be recalled


class LimitSettings(Model):
    user_turns: int = Field(10, ge=0, le=1000)  # turns one user may begin per window, in all channels (0: no limit)
    user_window_s: int = Field(60, ge=1, le=86_400)
    # Commands that call no model (/roll, /sheet, /attack, /buy …) one user may run per window, in all channels
    # (0: no limit); counted in each process's memory (engine/limits.py says why)
    user_commands: int = Field(30, ge=0, le=10_000)
    user_commands_window_s: int = Field(60, ge=1, le=86_400)
    guild_daily_tokens: int = Field(0, ge=0)  # model tokens (input + output) a server may use per UTC day (0: no limit)


class GameSettings(Model):
    """The house rules a new game begins with where no server chose them (the terminal, a server that never set
    them with /gm-admin config)."""

    leveling: Literal["xp", "milestone"] = "xp"  # a level is earned by XP (the SRD's thresholds) or by a milestone
    starting_level: int = Field(1, ge=1, le=20)  # the level new characters begin at, at most


class Price(Model):
    """What a model costs, in US dollars per million tokens (for `lorekeeper analyze`)."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(None, ge=0)  # cached input tokens; None: billed as input

    def cost(self, input_tokens: int, output_tokens: int, cache_read_tokens: int) -> float:
        cached = self.input if self.cache_read is None else self.cache_read
        return (input_tokens * self.input + output_tokens * self.output + cache_read_tokens * cached) / 1_000_000


class EngineConfig(Model):
    turn: TurnSettings = Field(default_factory=TurnSettings)
    lore: LoreSettings = Field(default_factory=LoreSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    game: GameSettings = Field(default_factory=GameSettings)
    agents: dict[AgentType, AgentSettings] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)  # by model name, as the turn log records it

    def agent(self, agent: AgentType) -> AgentSettings:
        entry = AGENTS.get(agent)
        if entry is None:
            return self.agents.get(agent, AgentSettings(enabled=True))
        chosen = self.agents.get(agent) or AgentSettings(temperature=entry.temperature, max_tokens=entry.max_tokens)
        update: dict[str, object] = {}
        if chosen.enabled is None:
            update["enabled"] = entry.enabled
        if entry.borrows is not None and chosen.provider == "auto" and not chosen.model:
            lender = self.agent(entry.borrows)  # the same model as the agent it helps, unless one is named
            update.update(provider=lender.provider, model=lender.model)
        return chosen.model_copy(update=update) if update else chosen

    def enabled(self, agent: AgentType) -> bool:
        return bool(self.agent(agent).enabled)

    def with_model(self, model: str) -> "EngineConfig":
        """Every agent whose settings name no model gets `model` (one setting for all, e.g. a server's model)."""
        agents = dict(self.agents)
        for agent in AGENTS:
            chosen = self.agent(agent)
            if not chosen.model:
                agents[agent] = chosen.model_copy(update={"model": model})
        return self.model_copy(update={"agents": agents})


def _read(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror}.") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {path} is not valid TOML: {exc}.") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"Config file {path} is not UTF-8 text ({exc.reason} at byte {exc.start}).") from exc


def _merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load_config(path: Path | None = None) -> EngineConfig:
    """The packaged defaults, overridden key by key by the file at path when one is given."""
    raw = _read(DEFAULT_CONFIG)
    if path is not None:
        raw = _merge(raw, _read(path))
    for table in ("turn", "lore", "limits", "game", "agents", "prices"):
        if not isinstance(raw.get(table, {}), dict):
            raise ConfigError(f"Config file {path}: [{table}] must be a table of settings, not a single value.")
    unknown = set(raw.get("agents", {})) - {a.value for a in AGENTS}
    if unknown:
        raise ConfigError(f"Config file {path}: unknown agent(s) {', '.join(sorted(unknown))}; "
                          f"use {', '.join(a.value for a in AGENTS)}.")
    try:
        return EngineConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"Config file {path or DEFAULT_CONFIG} is invalid:\n{describe_validation(exc, raw, EngineConfig)}") from exc
