"""A question with two buttons under it, answered only by the member who asked it; anyone else who presses one is
told so privately (not "This interaction failed")."""

from __future__ import annotations

from typing import Awaitable, Callable

import discord

Choice = Callable[[discord.Interaction], Awaitable[None]]


class Confirm(discord.ui.View):
    """`name` prefixes the buttons' ids (`name-confirm`, `name-cancel`)."""

    def __init__(self, owner: discord.abc.User, name: str, on_confirm: Choice, on_cancel: Choice, *, confirm: str,
                 cancel: str, danger: bool = False, timeout: float = 120) -> None:
        super().__init__(timeout=timeout)
        self.owner_id, self.owner_name = owner.id, getattr(owner, "display_name", owner.name)
        self._on_confirm, self._on_cancel = on_confirm, on_cancel
        self.confirm.label, self.cancel.label = confirm, cancel
        self.confirm.custom_id, self.cancel.custom_id = f"{name}-confirm", f"{name}-cancel"
        self.confirm.style = discord.ButtonStyle.danger if danger else discord.ButtonStyle.primary

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id == self.owner_id:
            return True
        await interaction.response.send_message(
            f"This question is {discord.utils.escape_markdown(self.owner_name)}'s to answer; the buttons are theirs.",
            ephemeral=True, allowed_mentions=discord.AllowedMentions.none())
        return False

    @discord.ui.button(label="Confirm", style=discord.ButtonStyle.primary)
    async def confirm(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        self.stop()
        await self._on_confirm(interaction)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, _: discord.ui.Button) -> None:
        self.stop()
        await self._on_cancel(interaction)
