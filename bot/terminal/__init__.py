"""The terminal front end: the same engine as the Discord bot, driven by a keyboard or a script file."""

from .commands import HELP
from .render import Markdown, Wrapper, rendered, wrap
from .session import Script, Stream, Terminal, line_editing, load_script, play_keyboard, play_script, read_line

__all__ = ["HELP", "Markdown", "Script", "Stream", "Terminal", "Wrapper", "line_editing", "load_script",
           "play_keyboard", "play_script", "read_line", "rendered", "wrap"]
