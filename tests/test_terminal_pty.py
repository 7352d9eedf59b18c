"""`lorekeeper play` at a real (pseudo-)terminal: the reply streams onto the screen while the model is still
writing, its Markdown shows as styles, and /quit leaves. The real OpenAI SDK talks to the loopback fake."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.fake_llm_server import FakeLLMServer, Step, agents_config, in_thread

pty = pytest.importorskip("pty", reason="pseudo-terminals are POSIX-only")
ROOT = Path(__file__).resolve().parent.parent


class Screen:
    """Everything the program wrote to its terminal, read as it comes."""

    def __init__(self, fd: int) -> None:
        self.fd, self.text, self.seen = fd, "", 0

    def until(self, wanted: str, timeout: float) -> str:
        """Read until `wanted` appears after what earlier calls found; returns the text up to it."""
        deadline = time.monotonic() + timeout
        while wanted not in self.text[self.seen:]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{wanted!r} did not appear in {timeout} s; the screen ends:\n{self.text[-1500:]}")
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if ready:
                try:
                    self.text += os.read(self.fd, 65536).decode("utf-8", "replace")
                except OSError:  # the program closed the terminal
                    raise AssertionError(f"the program left before {wanted!r}:\n{self.text[-1500:]}") from None
        end = self.text.index(wanted, self.seen) + len(wanted)
        found, self.seen = self.text[:end], end
        return found


def test_a_keyboard_session_streams_onto_a_real_terminal_with_styles(tmp_path):
    gate = threading.Event()
    reply = "The fog parts over the **harbour**, and *far* out on Gannet Rock the dark lantern waits."
    fake = FakeLLMServer([Step(reply, chunk=12, gate=gate, gate_after=2), Step("The gulls answer.")], api_key="k",
                         models=("gpt-test",))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOREKEEPER_", "OPENAI_", "ANTHROPIC_"))}
    env.pop("NO_COLOR", None)
    with in_thread(fake) as srv:
        env.update(OPENAI_BASE_URL=srv.url + "/v1", OPENAI_API_KEY="k", TERM="xterm", COLUMNS="80",
                   LOREKEEPER_CONFIG=str(agents_config(tmp_path)), PYTHONPATH=str(ROOT))
        leader, follower = pty.openpty()
        program = subprocess.Popen([sys.executable, "-m", "bot.cli", "play", "--db", str(tmp_path / "t.db"),
                                    "--name", "Aria", "--class", "fighter"], stdin=follower, stdout=follower,
                                   stderr=follower, env=env, cwd=tmp_path, start_new_session=True)
        os.close(follower)
        screen = Screen(leader)
        try:
            screen.until("joins the story", 120)
            screen.until("> ", 10)
            os.write(leader, b"I look out to sea.\r")
            shown = screen.until("The fog parts", 30)
            assert "(the GM is thinking…)" in shown
            time.sleep(0.3)  # the server holds the rest of the reply: nothing more can arrive meanwhile
            screen.until("", 0.1)
            assert "lantern waits" not in screen.text  # the first words are on screen before the model has finished
            gate.set()
            screen.until("waits.", 30)
            screen.until("> ", 10)
            assert "\x1b[1mharbour\x1b[0m" in screen.text and "\x1b[3mfar\x1b[0m" in screen.text
            assert "**" not in screen.text and "*far*" not in screen.text and "(revised)" not in screen.text
            # Bytes that are not UTF-8 (a paste from a Latin-1 file) reach the game as U+FFFD, not as a failed turn.
            os.write(leader, b"I shout \xff!\r")
            screen.until("The gulls answer.", 30)
            screen.until("> ", 10)
            assert "I shout \ufffd!" in fake.requests[-1].body["messages"][-1]["content"]
            os.write(leader, b"/quit\r")
            screen.until("Until next time.", 10)
            assert program.wait(20) == 0
        finally:
            gate.set()
            if program.poll() is None:
                program.kill()
                program.wait(5)
            os.close(leader)
