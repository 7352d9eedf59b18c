"""Lorekeeper's game engine: state, tools, agents and turns; it knows nothing of Discord.

The names below load on first use (PEP 562), so `import engine.errors` or a command's `--help` does not pay
for the dice grammar, the tools and pydantic models it never touches."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "EngineConfig": "config", "load_config": "config",
    "BadInput": "errors", "ConfigError": "errors", "GameError": "errors", "ModelError": "errors",
    "NoCharacter": "errors", "NoGameRunning": "errors", "ToolError": "errors", "TurnFailed": "errors",
    "Deps": "deps", "Engine": "game", "TurnResult": "turn",
    "ChatMessage": "models", "Completion": "models", "ModelClient": "models", "ModelRequest": "models",
    "ScriptedModel": "models", "Usage": "models",
    "AgentType": "basics", "GameState": "state",
    "Store": "store",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # once found, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from .config import EngineConfig, load_config
    from .errors import BadInput, ConfigError, GameError, ModelError, NoCharacter, NoGameRunning, ToolError, TurnFailed
    from .deps import Deps
    from .game import Engine
    from .models import ChatMessage, Completion, ModelClient, ModelRequest, ScriptedModel, Usage
    from .basics import AgentType
    from .state import GameState
    from .store import Store
    from .turn import TurnResult
