"""Lorekeeper's front ends: the Discord bot, the terminal, and the `lorekeeper` command."""
