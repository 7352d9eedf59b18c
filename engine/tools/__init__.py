"""Tools the agents call with XML tags; importing this package registers all of them."""

from . import afflictions, attacks, character, checks, class_features, combat, dying, grapple, hitpoints, lore, making, progress, quests, spells, trade, world  # noqa: F401  (registration side effect)
from .registry import TOOLS, Told, Tool, ToolCall, ToolContext, arun_args, arun_tool, parse_arguments, run_tool, tools_for

__all__ = ["TOOLS", "Told", "Tool", "ToolCall", "ToolContext", "arun_args", "arun_tool", "parse_arguments", "run_tool", "tools_for"]
