"""The terminal front end: the same engine as the Discord bot, driven by a keyboard or a script file."""

from .render import Markdown, Wrapper, rendered
from .session import (HELP, Script, Stream, Terminal, line_editing, load_script, play_keyboard, play_script,
                      read_line, wrap)

__all__ = ["HELP", "Markdown", "Script", "Stream", "Terminal", "Wrapper", "line_editing", "load_script",
           "play_keyboard", "play_script", "read_line", "rendered", "wrap"]
