"""Settings from the environment and .env, read in this one place and handed to the engine as values."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from urllib.parse import urlsplit

import structlog
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from engine.content import describe_validation
from engine.errors import ConfigError
from engine.providers import ProviderKeys

REPO_CORPUS = Path(__file__).resolve().parent.parent / "corpus"


class Settings(BaseSettings):
    """Every setting is listed, with its meaning, in .env.example."""

    model_config = SettingsConfigDict(env_prefix="LOREKEEPER_", env_file=".env", env_file_encoding="utf-8",
                                      env_ignore_empty=True, extra="ignore")

    db: Path = Path("data/lorekeeper.db")
    config: Path | None = None
    corpus: Path = REPO_CORPUS
    lore_dir: Path | None = None  # default: "lore" beside the database
    chroma_host: str | None = Field(None, validation_alias="CHROMA_HOST")
    log_level: str = "warning"
    debug: bool | None = None  # debug mode wherever neither an action, a channel nor an agent's config decides
    anthropic_api_key: SecretStr | None = Field(None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(None, validation_alias="ANTHROPIC_BASE_URL")
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    local_model: Path | None = None
    model_timeout: float = Field(60.0, gt=0, le=600)
    discord_token: SecretStr | None = Field(None, validation_alias="DISCORD_TOKEN")
    dev_guild: int | None = None  # sync slash commands to this guild at start-up (instant); otherwise by the owner
    admin_role: str | None = None  # members with this role may use /gm-admin as well as those with Manage Server

    @field_validator("anthropic_api_key", "openai_api_key", "discord_token", "anthropic_base_url", "openai_base_url",
                     mode="before")
    @classmethod
    def _strip_secret(cls, value: object) -> object:
        """A key or URL pasted with a trailing newline or space is the same (and a newline breaks HTTP)."""
        return value.strip() or None if isinstance(value, str) else value

    @field_validator("anthropic_base_url", "openai_base_url")
    @classmethod
    def _a_url(cls, value: str | None) -> str | None:
        """A base URL the SDKs can use, checked here so a typo is one sentence, not a traceback at the first turn."""
        if value is None:
            return value
        problem = _url_problem(value)
        if problem:
            raise ValueError(f"'{value}' is not a usable URL ({problem}); write it like http://localhost:8080/v1")
        return value

    @field_validator("chroma_host")
    @classmethod
    def _a_host(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        host, sep, port = value.strip().removeprefix("http://").rstrip("/").rpartition(":")
        if not sep:
            host, port = port, "8000"
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"'{value}' is not host:port (e.g. localhost:8000)")
        return f"{host}:{port}"

    @property
    def lore_path(self) -> Path:
        return self.lore_dir if self.lore_dir is not None else self.db.parent / "lore"

    def provider_keys(self) -> ProviderKeys:
        return ProviderKeys(
            anthropic_api_key=self.anthropic_api_key.get_secret_value() if self.anthropic_api_key else None,
            anthropic_base_url=self.anthropic_base_url,
            openai_api_key=self.openai_api_key.get_secret_value() if self.openai_api_key else None,
            openai_base_url=self.openai_base_url, local_model=self.local_model, timeout=self.model_timeout)


def _url_problem(value: str) -> str:
    """What is wrong with an http(s) URL, or '' when nothing is."""
    try:
        parts = urlsplit(value)
        port = parts.port  # reading it checks it
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return "it must start with http:// or https://"
    if not parts.hostname:
        return "it names no host"
    if port == 0:
        return "port 0 is not a port"
    if any(c.isspace() for c in value):
        return "it contains a space"
    return ""


def load_settings(**overrides: object) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        raise ConfigError(f"A setting is invalid (see .env.example):\n{describe_validation(exc)}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"The .env file is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8.") from exc
    except OSError as exc:
        raise ConfigError(f"The .env file cannot be read: {exc.strerror}.") from exc


class _Stderr:
    """Whatever sys.stderr is at the moment of writing (it may be replaced after logging is set up)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(level: str) -> None:
    """structlog to stderr, key=value lines; event names are snake_case."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ConfigError(f"LOREKEEPER_LOG_LEVEL '{level}' is not a level; use debug, info, warning or error.")
    logging.basicConfig(level=numeric, stream=sys.stderr, format="%(message)s")
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                    structlog.processors.format_exc_info, structlog.dev.ConsoleRenderer(colors=False)],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),
        cache_logger_on_first_use=False,
    )
