"""Terminal play: a game driven by a keyboard (replies streamed as they arrive) or by a script file."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field

from engine import GameError, NoGameRunning, ScriptedModel
from engine.characters import CLASSES
from engine.rules.origins import origin
from engine.content import load_yaml_model
from engine.errors import ConfigError, NeedsConfirming
from engine.jsonio import untrusted, well_formed
from engine.basics import AgentType
from engine.lore.retrieval import sources_line
from engine.turn import TurnResult, interrupted_notice

from . import render
from .commands import COMMANDS, HELP
from .render import Markdown, Wrapper, bold, clean, rendered, wrap
from .seat import Seat



class ScriptCharacter(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str
    char_class: str = Field(alias="class")
    species: str | None = None
    background: str | None = None


class ScriptStep(BaseModel):
    model_config = ConfigDict(extra="forbid")
    say: str
    replies: list[str] = Field(default_factory=list)


class Script(BaseModel):
    """A session without a keyboard: the player's lines, and what the scripted model answers to each."""

    model_config = ConfigDict(extra="forbid")
    adventure: str | None = None
    world: list[str] = Field(default_factory=list)  # the world-builder's replies, for --premise
    character: ScriptCharacter | None = None
    steps: list[ScriptStep] = Field(min_length=1)


def load_script(path: Path) -> Script:
    return load_yaml_model(path, Script, "script")


@dataclass
class Terminal(Seat):
    """A game at the keyboard: the seat (commands.py acts with it), a line read at a time, replies streamed."""

    write: Callable[[str], None] | None = None  # set: replies stream as they arrive (a keyboard session)
    commands: dict[str, Callable[[str], Awaitable[None]]] = field(init=False)

    def __post_init__(self) -> None:
        self.character_file: Path | None = None  # --character: a JSON file to import for a new character
        self.scores: str | None = None  # --scores: how a new character's ability scores are made
        self.species: str | None = None  # --species and --background, for a new character
        self.background: str | None = None
        # Commands that ask the engine and show the answer are in commands.py; these three drive the game itself.
        self.commands = {**{word: functools.partial(command, self) for word, command in COMMANDS.items()},
                         "/undo": self.cmd_undo, "/retry": self.cmd_retry, "/new": self.cmd_new}
        self.adventure: str | None = None
        self._turn: asyncio.Future[TurnResult] | None = None

    async def open(self, adventure: str | None, seed: int | None = None) -> None:
        """Resume this terminal's game, or start one. Options that only shape a new game are named when a game
        resumes instead of being silently ignored."""
        self.adventure = adventure
        try:
            state = await self.engine.state(self.channel)
            self.out(wrap(f"Resuming {state.title} — turn {state.turn}, at {state.location().name}."))
            unused = [f"--adventure {adventure}" for _ in [1] if adventure and adventure != state.adventure_id]
            unused += [f"--seed {seed}" for _ in [1] if seed is not None]
            if unused:
                self.out(wrap(f"({' and '.join(unused)} only shape{'s' if len(unused) == 1 else ''} a new game: "
                              f"this one resumed. /new starts a new one; --game NAME keeps another.)"))
            self.out(rendered(await self.last_narration(), self.color))
        except NoGameRunning:
            state, intro = await self.engine.start_game(self.channel, adventure=adventure)
            self.out(f"=== {state.title} ===\n")
            self.out(rendered(intro, self.color))
        # A line typed last time that the program stopped before answering (a crash, a kill): say so once.
        for lost in await self.engine.recover_interrupted(lambda channel_id, _guild: channel_id == self.channel):
            self.out("\n" + wrap(interrupted_notice(lost)))

    async def last_narration(self) -> str:
        session = await self.engine.session(self.channel)
        messages = await self.engine.deps.store.messages(session.id, limit=10)
        told = [m for m in messages if m.agent is not AgentType.PLAYER]
        return told[-1].text if told else ""

    async def ensure_character(self, name: str | None, char_class: str | None) -> None:
        state = await self.engine.state(self.channel)
        if self.user_id in state.characters:
            ch = state.characters[self.user_id]
            self.out(f"\nYou play {ch.name}, level {ch.level} {ch.char_class}.")
            if (name and name != ch.name) or (char_class and char_class.lower() != ch.char_class.lower()):
                self.out(wrap("(--name and --class make a new character: you already have one in this game. "
                              "/new starts a new game.)"))
            return
        if self.character_file is not None:
            ch = await self.engine.import_character(self.channel, self.user_id, read_character_file(self.character_file))
            self.out(f"\n{ch.name} the {origin(ch)} joins the story, from {self.character_file.name}. "
                     f"(/help lists commands)")
            return
        while True:
            if name is None or char_class is None:
                if self.ask is None:
                    raise ConfigError("No character yet: give --name and --class, or a 'character' in the script.")
                name = name or (await self.ask("Your character's name: ")).strip()
                if name.lower() in ("/quit", "/exit"):
                    raise EOFError
                if name.lower() == "/help":  # commands work once there is a character; until then, say so
                    self.out(HELP + "\nFirst, your character: a name, then a class.")
                    name = None
                    continue
                char_class = char_class or (await self.ask(f"Class ({', '.join(CLASSES)}): ")).strip()
            try:
                ch, made = await self.engine.create_character_scored(self.channel, self.user_id, name, char_class,
                                                                     scores=self.scores, species=self.species,
                                                                     background=self.background)
            except GameError as exc:
                self.out(exc.message)
                if self.ask is None:
                    raise
                name = char_class = None
                continue
            self.out(f"\n{ch.name} the {origin(ch)} joins the story{f' (ability scores: {made})' if self.scores else ''}. "
                     f"(/help lists commands)")
            return

    async def handle(self, line: str) -> bool:
        """One line of input; False when the player leaves."""
        line = line.strip()
        if not line:
            return True
        if line in ("/quit", "/exit"):
            self.out("The game is saved. Until next time.")
            return False
        try:
            if line.startswith("/"):
                word, _, rest = line.partition(" ")
                command = self.commands.get(word.lower())
                if command is None:
                    self.out(f"Unknown command {word}.\n{HELP}")
                else:
                    await command(rest.strip())
            else:
                await self.play(line)
        except GameError as exc:  # the apology is the GM's voice, in Markdown: shown as the story is
            self.out(rendered(exc.message, self.color, indent=""))
        return True

    async def play(self, line: str, retry: bool = False) -> None:
        """One turn; streamed as it arrives when this terminal has a `write`, else printed when it is done."""
        if self.write is None:
            result = await (self.engine.retry(self.channel, self.user_id) if retry else
                            self.engine.take_turn(self.channel, self.user_id, self.user_name, line))
            await self.show(result)
            return
        stream = Stream(self.write, self.color)
        self._turn = asyncio.ensure_future(
            self.engine.retry(self.channel, self.user_id, show=stream.show) if retry else
            self.engine.take_turn(self.channel, self.user_id, self.user_name, line, show=stream.show))
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not on every platform/thread
            loop.add_signal_handler(signal.SIGINT, self.interrupt)  # Ctrl-C stops this turn, not the program
        try:
            result = await self._turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if not self._turn.cancelled() or (current is not None and current.cancelling()):
                raise  # the program itself is stopping
            stream.close()
            await self.engine.cancelled(self.channel)
            self.out("Stopped: nothing of that turn happened. (Ctrl-C at the prompt leaves the game.)")
            return
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signal.SIGINT)
            if not self._turn.cancelled():
                stream.close()
        if not stream.matches(result.reply):  # the committed reply is the one that counts (a correction, a retry)
            self.out(f"(revised)\n{rendered(result.reply, self.color)}")
        await self.show(result, told=True)

    def interrupt(self) -> None:
        """Ctrl-C during a turn: stop it (nothing of it is applied)."""
        if self._turn is not None and not self._turn.done():
            self._turn.cancel()

    async def show(self, result: TurnResult, told: bool = False) -> None:
        """The reply (unless it was streamed), then what players may see of the mechanics and sources, and the
        combat tracker while a fight goes on."""
        if not told:
            speaker = result.npc.name if result.npc else "GM"
            self.out(f"\n{bold(clean(speaker), self.color)}:\n{rendered(result.reply, self.color)}")
        for line in result.mechanics():
            self.out(wrap(line, "    "))
        if result.sources and await self.engine.show_sources(self.channel):
            self.out(wrap(sources_line(result.sources), "    "))
        if result.state.combat.active:
            self.out(render.combat_tracker(result.state, self.color))
        self.out("")

    async def cmd_undo(self, count: str) -> None:
        """`/undo [n]`: take back the last n turns (the state as it was before them; the log keeps them)."""
        try:
            n = int(count) if count else 1
        except ValueError:
            self.out("Usage: /undo or /undo 3 (a number of turns).")
            return
        try:
            undone = await self.engine.undo(self.channel, n)
        except NeedsConfirming as exc:  # it would also take back what you did yourself since: ask first
            self.out(wrap(exc.message))
            if self.ask is None:  # a script has no one to answer
                self.out("Nothing was undone.")
                return
            if (await self.ask("Undo all of it? (yes/no) ")).strip().lower() not in ("y", "yes"):
                self.out("Nothing was undone.")
                return
            undone = await self.engine.undo(self.channel, n, seen=exc.seen)
        state = undone.state
        self.out(wrap(f"Undone: {undone.turns} turn{'s' if undone.turns > 1 else ''}. Back at turn {state.turn}, "
                      f"at {state.location().name}."))
        self.out(rendered(await self.last_narration(), self.color))

    async def cmd_new(self, _: str) -> None:
        """`/new`: end this game (its log is kept) and start a new one, with a new character."""
        if self.ask is not None:
            answer = (await self.ask("End this game and start a new one? (yes/no) ")).strip().lower()
            if answer not in ("y", "yes"):
                self.out("The game goes on.")
                return
        old = (await self.engine.state(self.channel)).characters.get(self.user_id)
        await self.engine.end_game(self.channel)
        state, intro = await self.engine.start_game(self.channel, adventure=self.adventure)
        self.out(f"=== {state.title} ===\n")
        self.out(rendered(intro, self.color))
        if self.ask is None and old is not None:  # a script has no keyboard: the same character again
            self.species, self.background = old.species, old.background
            await self.ensure_character(old.name, old.char_class)
        else:
            await self.ensure_character(None, None)

    async def cmd_retry(self, _: str) -> None:
        """`/retry`: the last turn is taken back and asked again (the same words; the dice fall the same)."""
        self.out("Asking the GM again…")
        await self.play("", retry=True)

class Stream:
    """A reply written as it arrives: "the GM is thinking…" until the first words, then the speaker and the text,
    its Markdown rendered and its words wrapped and indented. Told the whole visible text each time; when it
    starts over (a retried generation), says so."""

    THINKING = "(the GM is thinking…)"

    def __init__(self, write: Callable[[str], None], ansi: bool = False) -> None:
        self.write, self.ansi, self.shown, self.speaker = write, ansi, "", None
        self.markdown, self.wrapper = Markdown(ansi), Wrapper()
        self.write(self.THINKING)

    def show(self, speaker: str, text: str) -> None:
        # Leading whitespace (or what a tag at the start left) is never shown: compared as shown, stripped, so
        # that one reply is one stream.
        text = text.lstrip()
        if not text and self.speaker is None:
            return
        if self.speaker is None:
            self.speaker = speaker
            self.write("\r" + " " * len(self.THINKING) + f"\r\n{bold(clean(speaker), self.ansi)}:\n  ")
            self.shown = ""
        elif not text.startswith(self.shown):
            self.write(self._settle() + "\n  (… starting that again)\n  ")
            self.shown = ""
        self.write(self.wrapper.feed(self.markdown.feed(text[len(self.shown):])))
        self.shown = text

    def _settle(self) -> str:
        """What is held back (a half marker, an unfinished word), written out; the next text starts afresh."""
        rest = self.wrapper.feed(self.markdown.flush()) + self.wrapper.flush()
        self.markdown, self.wrapper = Markdown(self.ansi), Wrapper()
        return rest

    def close(self) -> None:
        self.write(self._settle() + "\n" if self.speaker is not None else "\r" + " " * len(self.THINKING) + "\r")

    def matches(self, reply: str) -> bool:
        """Whether the committed reply says what was streamed (markdown emphasis and spacing aside)."""
        def plain(text: str) -> str:
            return " ".join(text.replace("*", "").replace("\u200b", "").split())
        return plain(reply) == plain(self.shown)


def read_character_file(path: Path) -> object:
    """The JSON of a character file, or a sentence saying why it cannot be read."""
    try:
        return untrusted(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"Cannot read the character file {path}: {exc.strerror}.") from exc
    except ValueError as exc:
        raise ConfigError(f"The character file {path} cannot be used: {exc}.") from None


async def play_script(terminal: Terminal, script: Script, model: ScriptedModel, seed: int | None = None) -> None:
    """Run a script: each step's replies are queued for the scripted model, then its line is played."""
    await terminal.open(script.adventure, seed)
    if script.character is not None:  # flags given on the command line win
        terminal.species = terminal.species or script.character.species
        terminal.background = terminal.background or script.character.background
    await terminal.ensure_character(script.character.name if script.character else None,
                                    script.character.char_class if script.character else None)
    for step in script.steps:
        model.add(*step.replies)
        terminal.out(f"> {step.say}")
        if not await terminal.handle(step.say):
            break
        if model.exhausted:
            raise ConfigError(f"The script gave too few replies for the step '{step.say}'.")
        if model.replies:
            raise ConfigError(f"The script gave {len(model.replies)} more repl{'y' if len(model.replies) == 1 else 'ies'} "
                              f"than the step '{step.say}' used.")


def line_editing(history: Path) -> Callable[[], None]:
    """Arrow keys, editing and a history of earlier lines at the prompt (readline, where the platform has it);
    returns what saves the history at the end."""
    try:
        import readline
    except ImportError:  # Windows without pyreadline: plain input still works
        return lambda: None
    readline.set_history_length(500)
    with contextlib.suppress(OSError):
        readline.read_history_file(history)

    def save() -> None:
        with contextlib.suppress(OSError):
            history.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(history)
    return save


async def play_keyboard(terminal: Terminal, adventure: str | None, name: str | None, char_class: str | None,
                        seed: int | None = None, history: Path | None = None) -> None:
    save = line_editing(history) if history is not None and sys.stdin.isatty() else (lambda: None)
    try:
        await _play_keyboard(terminal, adventure, name, char_class, seed)
    finally:
        save()


async def _play_keyboard(terminal: Terminal, adventure: str | None, name: str | None, char_class: str | None,
                         seed: int | None) -> None:
    await terminal.open(adventure, seed)
    try:
        await terminal.ensure_character(name, char_class)
    except EOFError:
        terminal.out("\nNo character made; the game is saved. Until next time.")
        return
    assert terminal.ask is not None
    while True:
        try:
            line = await terminal.ask("> ")
        except EOFError:
            terminal.out("\nThe game is saved. Until next time.")
            return
        if not await terminal.handle(line):
            return


async def read_line(prompt: str) -> str:
    """input() in a daemon thread: Ctrl-C then ends the program at once instead of waiting for Enter."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def read() -> None:
        try:
            line = well_formed(input(prompt))  # bytes that are not UTF-8 arrive as lone surrogates
        except BaseException as exc:  # EOFError on Ctrl-D, and anything else, goes to the waiting coroutine
            # Bound now: Python deletes `exc` when the except block ends.
            loop.call_soon_threadsafe(lambda error=exc: answer.done() or answer.set_exception(error))
        else:
            loop.call_soon_threadsafe(lambda: answer.done() or answer.set_result(line))

    threading.Thread(target=read, daemon=True).start()
    return await answer
