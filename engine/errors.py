"""Errors whose message is a sentence a player or server admin can read."""

from __future__ import annotations


class GameError(Exception):
    """Root of every error meant to be shown to a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NoGameRunning(GameError):
    def __init__(self) -> None:
        super().__init__("No game is running here. Start one with /game start.")


class GameAlreadyRunning(GameError):
    def __init__(self) -> None:
        super().__init__("A game is already running here. End it with /game end first.")


class NoCharacter(GameError):
    def __init__(self) -> None:
        super().__init__("You have no character in this game yet. Create one with /char create.")


class BadInput(GameError):
    """The user's own input (an action, a dice expression, a name) cannot be used."""


class NeedsConfirming(GameError):
    """Going ahead would also take back (or change) what the message lists: ask the user, then go ahead with what
    they saw (`seen`), so nothing is taken back that they were not shown."""

    def __init__(self, message: str, *, items: list[str]) -> None:
        super().__init__(message)
        self.items = items

    @property
    def seen(self) -> int:
        return len(self.items)


class ConfigError(GameError):
    """A configuration file, setting or content file is wrong; the message says where and how."""


class TurnFailed(GameError):
    """A turn could not be completed; nothing it did was applied and the player's message was kept."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class StaleSession(GameError):
    """Someone else (another process on the same database) changed this game first: nothing was applied."""

    def __init__(self) -> None:
        super().__init__("Another action in this game was settled at the same moment, so yours was not applied. "
                         "Nothing happened; send it again.")


class ToolError(Exception):
    """A tool call that cannot be carried out; its message becomes the observation the agent reads.

    `public` is what players may read of the refusal, under the reply ("✗ Aria could not go to …"): a sentence
    that names only what they know, or True when the message itself is one (a purse too light, a shop sold out).
    None: the refusal is the agent's own slip (a name that is nothing, a bad argument), for it to mend."""

    def __init__(self, message: str = "", *, public: str | bool | None = None) -> None:
        super().__init__(message)
        self.public = sentence(message) if public is True else public or None


def sentence(text: str) -> str:
    """A clause as a sentence: its first letter a capital, and one full stop at its end."""
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith((".", "!", "?")) else ".")


class ModelError(Exception):
    """A model provider failed; `retryable` says whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class ProviderConfigError(ModelError):
    """A provider refused the configuration itself (bad key, unknown model): retrying cannot help."""
