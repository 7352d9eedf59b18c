"""What a server's admins choose for every game on it: the Sources line, how much of the mechanics shows under
replies, who may start games, and the house rules a new game begins with (how a level is earned, the starting
level). Stored per server (a Discord guild); a channel's own switch still wins."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
import structlog

from .config import GameSettings
from .errors import BadInput

log = structlog.get_logger(__name__)

Verbosity = Literal["full", "dice", "story"]
Starters = Literal["everyone", "admins", "role"]
Leveling = Literal["xp", "milestone"]
LEVELING = {"xp": "by experience points, at the SRD's thresholds (the GM or an admin awards them)",
            "milestone": "by milestone (the GM or an admin grants a level when the story reaches one)"}

VERBOSITY = {
    "full": "every roll and every change to the game under each reply",
    "dice": "only the dice (rolls and attacks) under each reply",
    "story": "the story alone (no mechanics under replies; /game status still shows them)",
}


class ServerSettings(BaseModel):
    # A setting a later version dropped is ignored, not an error: a downgrade keeps working.
    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    sources: bool | None = None  # the Sources line under replies; None: the config's default
    verbosity: Verbosity = "full"
    starters: Starters = "everyone"  # who may start games: anyone, admins, or admins and one role
    starter_role: str | None = None  # that role's id, when starters is "role"
    leveling: Leveling | None = None  # how a level is earned in new games (None: the config's [game] default)
    starting_level: int | None = Field(None, ge=1, le=20)  # the level new characters begin at, at most (likewise)
    player_notes: bool = False  # whether players (not only admins) add canon notes to their game's journal (/note)

    def describe(self, role_name: str | None = None, sources_default: bool = False,
                 game: GameSettings | None = None) -> str:
        sources = ("on" if self.sources else "off") if self.sources is not None else \
            f"{'on' if sources_default else 'off'} (the bot's default)"
        starters = {"everyone": "anyone", "admins": "admins only",
                    "role": f"admins and members with the role {role_name or self.starter_role}"}[self.starters]
        leveling, start = self.rules(game or GameSettings())
        return (f"Sources line: {sources}\nMechanics under replies: {self.verbosity} — {VERBOSITY[self.verbosity]}\n"
                f"Who may start games: {starters}\nLevels are earned {LEVELING[leveling]}\n"
                f"Characters start at level {start} at most\n"
                f"Canon notes are added by {'players and admins' if self.player_notes else 'admins only'}")

    def rules(self, default: GameSettings) -> tuple[Leveling, int]:
        """The house rules a new game here begins with: this server's choice, else the config's."""
        return (self.leveling or default.leveling, self.starting_level or default.starting_level)


def load(guild_id: str, stored: str | None) -> ServerSettings:
    """The stored settings, or the defaults; settings that no longer parse are logged and left at their defaults."""
    if stored is None:
        return ServerSettings()
    try:
        return ServerSettings.model_validate_json(stored)
    except ValidationError as exc:
        log.warning("server_settings_unreadable", guild_id=guild_id, errors=exc.error_count())
        return ServerSettings()


def changed(settings: ServerSettings, **changes: object) -> ServerSettings:
    """The settings with `changes` (None: left as they are; sources="default": back to the default), checked as a
    whole."""
    data = settings.model_dump()
    data.update({k: v for k, v in changes.items() if v is not None})
    if data["sources"] == "default":  # back to the bot's default
        data["sources"] = None
    if data["starters"] == "role" and not data["starter_role"]:
        raise BadInput("Name the role whose members may start games.")
    if data["starters"] != "role":
        data["starter_role"] = None
    try:
        return ServerSettings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadInput(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
