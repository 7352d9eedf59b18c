"""Settings from the environment and .env, read in this one place and handed to the engine as values."""

from __future__ import annotations

import difflib
import logging
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import structlog
from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from engine.config import EngineConfig, load_config
from engine.validation import describe_validation
from engine.errors import ConfigError
from engine.providers import ProviderKeys
from engine.store import is_postgres

REPO_CORPUS = Path(__file__).resolve().parent.parent / "corpus"


class Settings(BaseSettings):
    """Every setting is listed, with its meaning, in .env.example."""

    model_config = SettingsConfigDict(env_prefix="LOREKEEPER_", env_file=".env", env_file_encoding="utf-8",
                                      env_ignore_empty=True, extra="ignore")

    db: str = "data/lorekeeper.db"  # a SQLite file, or postgresql://user:password@host:5432/name
    config: Path | None = None
    corpus: Path = REPO_CORPUS
    lore_dir: Path | None = None  # default: "lore" beside the database
    chroma_host: str | None = Field(None, validation_alias="CHROMA_HOST")
    # auto: `play` and `bot` bring the lore index up to date with the corpus as they start (only new or changed
    # files are embedded); off: they use the index as it is (`lorekeeper lore ingest` keeps it).
    lore_index: Literal["auto", "off"] = "auto"
    log_level: str = "warning"
    debug: bool | None = None  # debug mode wherever neither an action, a channel nor an agent's config decides
    anthropic_api_key: SecretStr | None = Field(None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_base_url: str | None = Field(None, validation_alias="ANTHROPIC_BASE_URL")
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY")
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    local_model: Path | None = None
    model: str | None = None  # one model name for every agent whose config names none (e.g. "llama3.1" for Ollama)
    model_timeout: float = Field(60.0, gt=0, le=600)
    discord_token: SecretStr | None = Field(None, validation_alias="DISCORD_TOKEN")
    dev_guild: int | None = None  # sync slash commands to this guild at start-up (instant); otherwise by the owner
    admin_role: str | None = None  # members with this role may use /gm-admin as well as those with Manage Server
    stream_interval: float = Field(1.0, ge=0, le=10)  # seconds between edits of a streaming reply; 0: post it whole
    # Several processes share the bot by shards: this one runs shard_ids of shard_count (neither: Discord decides).
    shard_count: int | None = Field(None, ge=1)  # before shard_ids: its validator reads it
    shard_ids: Annotated[tuple[int, ...] | None, NoDecode] = None  # "0-3" or "0,2,5"; NoDecode: not read as JSON

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

    @field_validator("db", mode="before")
    @classmethod
    def _a_database(cls, value: object) -> object:
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        if not isinstance(value, str):
            return value  # pydantic says what is wrong with it
        value = value.strip()
        scheme = value.split("://", 1)[0] if "://" in value else ""
        if not scheme:
            return value
        if scheme not in ("postgresql", "postgres"):
            raise ValueError(f"'{scheme}://' is not a database Lorekeeper uses: give a file path (SQLite) or a "
                             "postgresql://user:password@host:5432/name URL")
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 (reading it checks it)
        except ValueError as exc:
            raise ValueError(f"the PostgreSQL URL cannot be read ({exc}); write it like "
                             "postgresql://user:password@host:5432/name") from None
        if not parts.hostname and "host=" not in parts.query:
            raise ValueError("the PostgreSQL URL names no host; write it like postgresql://user:password@host:5432/name")
        return value

    @property
    def database(self) -> Path | str:
        """What the store opens: a SQLite file's path, or the PostgreSQL URL."""
        return self.db if is_postgres(self.db) else Path(self.db)

    @property
    def data_dir(self) -> Path:
        """Where local files go (the terminal's log and history, the lore index by default): beside a SQLite
        database, or ./data when the database is a server."""
        return Path("data") if is_postgres(self.db) else Path(self.db).parent

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

    @field_validator("shard_ids", mode="before")
    @classmethod
    def _shard_list(cls, value: object, info: ValidationInfo) -> object:
        """Ranges and single ids, each below the shard count, none twice."""
        if value is None or isinstance(value, str) and not value.strip():
            return None
        ranges = _shard_ranges(value)
        if not ranges:
            return None  # an empty list, as when unset: every shard
        if "shard_count" not in info.data:
            return ()  # the count is itself invalid: its error is the one to read, and nothing here is used
        count = info.data["shard_count"]
        if count is None:
            raise ValueError("LOREKEEPER_SHARD_IDS needs LOREKEEPER_SHARD_COUNT, the number of shards of every "
                             "process together (e.g. LOREKEEPER_SHARD_COUNT=2 with LOREKEEPER_SHARD_IDS=0 here and "
                             "=1 in the other process)")
        for first, last in ranges:
            if last >= count:
                raise ValueError(f"shard {last} is not below LOREKEEPER_SHARD_COUNT={count}: "
                                 f"shard ids run from 0 to {count - 1}")
        ids: set[int] = set()
        for first, last in ranges:
            again = ids.intersection(range(first, last + 1))
            if again:
                raise ValueError(f"'{value}' lists shard {min(again)} more than once")
            ids.update(range(first, last + 1))
        return tuple(sorted(ids))

    def engine_config(self) -> EngineConfig:
        """The engine's settings file, with LOREKEEPER_MODEL given to every agent it names no model for."""
        config = load_config(self.config)
        return config.with_model(self.model) if self.model else config

    @property
    def lore_path(self) -> Path:
        return self.lore_dir if self.lore_dir is not None else self.data_dir / "lore"

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


def _shard_ranges(value: object) -> list[tuple[int, int]]:
    """'0-3,5' as [(0, 3), (5, 5)]; a number or a list of numbers as given."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if isinstance(value, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value):
        return [(i, i) for i in value]
    usage = f"'{value}' is not a list of shard ids; write it like 0-3 or 0,2,5"
    if not isinstance(value, str):
        raise ValueError(usage)
    ranges = []
    for part in value.split(","):
        first, dash, last = part.strip().partition("-")
        first, last = first.strip(), last.strip() if dash else first.strip()
        if not all(n.isascii() and n.isdigit() for n in (first, last)):
            raise ValueError(usage)
        if int(first) > int(last):
            where = "" if part.strip() == value.strip() else f" in '{value}'"
            raise ValueError(f"'{part.strip()}'{where} runs backwards; write it like {last}-{first}")
        ranges.append((int(first), int(last)))
    return ranges


_ASSIGNMENT = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=")


def known_names() -> set[str]:
    """Every environment name Settings reads."""
    names = set()
    for name, spec in Settings.model_fields.items():
        alias = spec.validation_alias
        names.add(alias if isinstance(alias, str) else f"LOREKEEPER_{name.upper()}")
    return names


def env_warnings(path: Path = Path(".env"), environ: dict[str, str] | None = None) -> list[str]:
    """What is wrong in .env and the environment that would otherwise pass in silence: a line that is not
    NAME=value (it is skipped, the lines after it still count), and a LOREKEEPER_ name that is no setting."""
    known = known_names()
    ours = sorted(n for n in known if n.startswith("LOREKEEPER_"))

    def unknown(name: str) -> str | None:
        if not name.startswith("LOREKEEPER_") or name in known:
            return None
        close = difflib.get_close_matches(name, ours, n=1, cutoff=0.75)
        return f"{name} is not a setting" + (f": did you mean {close[0]}?" if close else " (.env.example lists them).")

    found = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    except (OSError, UnicodeDecodeError):
        lines = []  # load_settings says what is wrong with the file itself
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        m = _ASSIGNMENT.match(text)
        if m is None:
            shown = text if len(text) <= 40 else text[:39] + "…"
            found.append(f"{path} line {number}: '{shown}' is not NAME=value, so it is skipped "
                         "(the lines after it still count).")
        elif (problem := unknown(m.group(1))) is not None:
            found.append(f"{path} line {number}: {problem}")
    for name in sorted(os.environ if environ is None else environ):
        if (problem := unknown(name)) is not None and not any(f": {name} " in w for w in found):
            found.append(f"environment: {problem}")
    return found


def load_settings(**overrides: object) -> Settings:
    logging.getLogger("dotenv.main").setLevel(logging.ERROR)  # its "could not parse" is said better below
    for warning in env_warnings():
        print(f"lorekeeper: warning: {warning}", file=sys.stderr)
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


_HANDLER: logging.Handler | None = None


def configure_logging(level: str, file: Path | None = None) -> None:
    """structlog key=value lines (event names are snake_case) to stderr, or appended to `file`: a game played at
    the keyboard keeps its screen for the game, and its log beside the database."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ConfigError(f"LOREKEEPER_LOG_LEVEL '{level}' is not a level; use debug, info, warning or error.")
    sink: Any = _Stderr()
    if file is not None:
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            sink = file.open("a", encoding="utf-8", buffering=1)
        except OSError as exc:
            raise ConfigError(f"Cannot write the log file {file}: {exc.strerror}.") from exc
    global _HANDLER
    root = logging.getLogger()
    if _HANDLER is not None:  # set again for each command (tests run several in one process): ours only
        root.removeHandler(_HANDLER)
    _HANDLER = logging.StreamHandler(sink)
    _HANDLER.setFormatter(logging.Formatter("%(message)s"))
    root.addHandler(_HANDLER)
    root.setLevel(numeric)
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                    structlog.processors.format_exc_info, structlog.dev.ConsoleRenderer(colors=False)],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sink),
        cache_logger_on_first_use=False,
    )
