"""The command tree: one place where errors become short ephemeral answers, and where commands that call no model
are held to the per-user limit."""

from __future__ import annotations

import discord
import structlog
from discord import app_commands

from engine.errors import GameError
from engine.limits import RateLimited

log = structlog.get_logger(__name__)

NOT_PERMITTED = "You are not permitted to use this command."
GENERIC = "Something went wrong on our side. It has been logged; try again in a moment."
# Commands the per-user command limit does not count: turns (the turn limit judges them, in the database) and the
# admins' own. Every other command calls no model, and is counted (engine/limits.py, Commands).
UNCOUNTED = frozenset({"act", "talk", "use", "retry", "gm-admin"})


class InputError(app_commands.AppCommandError):
    """A user's argument that cannot be used (a bad dice expression); its message is for the user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def user_message(error: Exception) -> str | None:
    """The sentence to show for an error, or None when it is unexpected (logged, answered generically)."""
    original = getattr(error, "original", error)  # CommandInvokeError wraps what the command raised
    if isinstance(original, GameError):
        return original.message
    if isinstance(original, InputError):
        return original.message
    if isinstance(error, app_commands.TransformerError) and isinstance(error.__cause__, InputError):
        return error.__cause__.message
    if isinstance(error, app_commands.CheckFailure):
        return NOT_PERMITTED
    if isinstance(error, app_commands.CommandOnCooldown):
        return f"Slow down: try again in {error.retry_after:.0f} s."
    return None


async def respond(interaction: discord.Interaction, content: str | None = None, **kwargs) -> None:
    """Answer whether or not the command deferred first."""
    if interaction.response.is_done():
        await interaction.followup.send(content, **kwargs)
    else:
        await interaction.response.send_message(content, **kwargs)


async def answer(interaction: discord.Interaction, text: str) -> None:
    """An ephemeral answer, whether or not the interaction was already acknowledged."""
    if interaction.response.is_done():
        await interaction.followup.send(text, ephemeral=True, allowed_mentions=discord.AllowedMentions.none())
    else:
        await interaction.response.send_message(text, ephemeral=True, allowed_mentions=discord.AllowedMentions.none())


class GameTree(app_commands.CommandTree):
    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        """Before any command runs: past the per-user limit of commands that call no model, a private answer with
        when to go on, and the command is not run. Autocomplete, buttons and turns are not counted."""
        command = interaction.command if interaction.type is discord.InteractionType.application_command else None
        if command is None or (getattr(command, "root_parent", None) or command).name in UNCOUNTED:
            return True
        try:
            self.client.engine.check_command(  # type: ignore[attr-defined]
                str(interaction.user.id), str(interaction.guild_id) if interaction.guild_id is not None else None)
        except RateLimited as exc:
            await answer(interaction, exc.message)
            return False
        return True

    async def on_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
        text = user_message(error)
        if text is None:
            command = interaction.command.qualified_name if interaction.command else "?"
            log.error("command_failed", command=command, channel_id=interaction.channel_id, exc_info=error)
            text = GENERIC
        try:
            await answer(interaction, text)
        except discord.HTTPException:
            log.warning("error_reply_failed", channel_id=interaction.channel_id)
