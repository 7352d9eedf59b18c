"""Lorekeeper's game engine: state, tools, agents and turns; it knows nothing of Discord."""

from .config import EngineConfig, load_config
from .errors import BadInput, ConfigError, GameError, ModelError, NoCharacter, NoGameRunning, ToolError, TurnFailed
from .game import Deps, Engine, TurnResult
from .models import ChatMessage, Completion, ModelClient, ModelRequest, ScriptedModel, Usage
from .state import AgentType, GameState
from .store import Store

__all__ = [
    "AgentType", "BadInput", "ChatMessage", "Completion", "ConfigError", "Deps", "Engine", "EngineConfig", "GameError",
    "GameState", "ModelClient", "ModelError", "ModelRequest", "NoCharacter", "NoGameRunning", "ScriptedModel", "Store",
    "ToolError", "TurnFailed", "TurnResult", "Usage", "load_config",
]
