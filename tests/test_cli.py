"""`lorekeeper play` end to end: scripts, saved games, clear errors."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from tests.fake_llm_server import FakeLLMServer, Step, agents_config, in_thread

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "quay.yaml"


def play(tmp_path, capsys, *args):
    code = main(["play", "--db", str(tmp_path / "t.db"), *args])
    out = capsys.readouterr()
    return code, out.out, " ".join(out.err.split())


def point_at(srv, tmp_path, monkeypatch) -> None:
    """The program's model settings aimed at a loopback fake server."""
    monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("LOREKEEPER_CONFIG", str(agents_config(tmp_path)))


def test_the_example_script_plays_through(tmp_path, capsys):
    code, out, err = play(tmp_path, capsys, "--script", str(EXAMPLE), "--seed", "1")
    assert code == 0, err
    assert "=== The Drowned Lantern of Saltmere ===" in out and "Aria the human fighter joins the story" in out
    assert "Ysolde Marrick:\n" in out and "🎲 Aria: 1d20+1 →" in out and "Quest started" in out
    assert "Coin: 9 gp" in out  # the tavern paid for with a tool call
    assert "<" not in out.split("=== ")[1].replace("<3", "")  # no tag reaches the player


def test_the_game_is_saved_and_resumed(tmp_path, capsys):
    play(tmp_path, capsys, "--script", str(EXAMPLE), "--game", "mine")
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump({"character": {"name": "Zed", "class": "rogue"},
                                     "steps": [{"say": "/inventory"}, {"say": "/quests"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(again), "--game", "mine", "--seed", "3",
                          "--adventure", "saltmere-lantern")
    assert code == 0, err
    assert "Resuming The Drowned Lantern of Saltmere" in out and "You play Aria" in out
    assert "Coin: 9 gp" in out and "The Drowned Lantern (active). ☐ Discover who stole" in out
    assert "relight-the-lantern" not in out  # no internal ids in what players read
    flat = " ".join(out.split())
    assert "(--seed 3 only shapes a new game: this one resumed." in flat  # said, not silently ignored
    assert "--adventure" not in flat.split("only shape")[0]  # the same adventure: nothing to say
    assert "--name and --class make a new character" in flat


def test_a_script_plays_in_a_throwaway_game_and_leaves_the_default_game_alone(tmp_path, capsys):
    for _ in range(2):  # the demo works every time
        code, out, err = play(tmp_path, capsys, "--script", str(EXAMPLE), "--seed", "1")
        assert code == 0, err
        assert "Resuming" not in out and "Coin: 9 gp" in out
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"character": {"name": "Zed", "class": "rogue"}, "steps": [{"say": "/status"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(mine), "--game", "terminal")
    assert code == 0, err and "Resuming" not in out  # the default game was never taken over by the scripts


def test_new_ends_the_game_and_starts_another(tmp_path, capsys):
    script = tmp_path / "new.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Zed", "class": "rogue"}, "steps": [
        {"say": "I pocket a coin.", "replies": ['<modify_inventory currency="gp" quantity="1"/>Got it.', " Shiny."]},
        {"say": "/new"}, {"say": "/inventory"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--game", "g")
    assert code == 0, err
    assert out.count("=== The Drowned Lantern of Saltmere ===") == 2 and out.count("Zed the human rogue joins") == 2
    assert "Coin: 10 gp" in out.split("> /inventory")[1]  # a new game: the pocketed coin (11 gp) is gone


def test_same_seed_same_story(tmp_path, capsys):
    _, first, _ = play(tmp_path, capsys, "--script", str(EXAMPLE), "--seed", "4", "--game", "a")
    _, second, _ = play(tmp_path, capsys, "--script", str(EXAMPLE), "--seed", "4", "--game", "b")
    assert first.split("> /roll")[0] == second.split("> /roll")[0]


def test_commands_and_errors_in_play(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Bo", "class": "rogue"}, "steps": [
        {"say": "/roll banana"}, {"say": "/rest nap"}, {"say": "/dance"}, {"say": "/status"}, {"say": "@Odile hello?"},
        {"say": "/sheet"}, {"say": "/quit"}, {"say": "never reached"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script))
    assert code == 0, err
    assert "is not a dice expression" in out and "short or long" in out and "Unknown command /dance" in out
    assert re.search(r"Saltmere Quay\n(.+\n)+\nParty +Class +HP +Conditions\n─+\nBo +rogue +10/10\n", out)  # a human: CON 15
    assert "Here: Ysolde Marrick" in out and "Odile Farrow is not here." in out
    assert "level 1 human rogue" in out and "The game is saved" in out and "never reached" not in out


def test_bad_scripts_are_clear_errors(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: [")
    code, _, err = play(tmp_path, capsys, "--script", str(bad))
    assert code == 2 and "not valid YAML" in err
    bad.write_text(yaml.safe_dump({"steps": [{"sey": "typo"}]}))
    code, _, err = play(tmp_path, capsys, "--script", str(bad))
    assert code == 2 and "steps[#1].sey: 'sey' is not a field here: did you mean 'say'?" in err
    code, _, err = play(tmp_path, capsys, "--script", str(tmp_path / "missing.yaml"))
    assert code == 2 and "Cannot read the script" in err
    bad.write_text(yaml.safe_dump({"character": {"name": "Bo", "class": "rogue"},
                                   "steps": [{"say": "/sheet", "replies": ["unused"]}]}))
    code, _, err = play(tmp_path, capsys, "--script", str(bad), "--game", "x")
    assert code == 2 and "more reply than the step '/sheet' used" in err


def test_a_script_without_a_character_says_how_to_give_one(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"say": "hello"}]}))
    code, _, err = play(tmp_path, capsys, "--script", str(script))
    assert code == 2 and "--name and --class" in err


def test_a_turn_that_fails_in_play_is_reported_and_the_session_goes_on(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Bo", "class": "rogue"}, "steps": [
        {"say": "I look around.", "replies": ["<thinking>only thoughts, nothing said</thinking>"]}, {"say": "/status"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script))
    assert code == 0 and "Nothing happened" in " ".join(out.split()) and "Saltmere Quay" in out


def test_a_script_with_too_few_replies_is_an_error(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Bo", "class": "rogue"}, "steps": [
        {"say": "I roll.", "replies": ["<roll>1d6</roll>"]}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script))
    assert code == 2 and "too few replies for the step 'I roll.'" in err


def test_start_up_inputs_that_are_not_text_are_clear_errors(tmp_path, capsys, monkeypatch):
    (tmp_path / ".env").write_bytes(b"LOREKEEPER_DB=\xff\xfe data.db\n")
    code, _, err = play(tmp_path, capsys, "--script", str(EXAMPLE))
    assert code == 2 and "not UTF-8" in err and "Traceback" not in err
    (tmp_path / ".env").unlink()
    config = tmp_path / "c.toml"
    config.write_bytes(b"[turn]\ntool_quota = \xff\n")
    monkeypatch.setenv("LOREKEEPER_CONFIG", str(config))
    code, _, err = play(tmp_path, capsys, "--script", str(EXAMPLE))
    assert code == 2 and "not UTF-8" in err


def test_keys_pasted_with_a_newline_are_trimmed(monkeypatch):
    from bot.settings import load_settings

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test\n")
    monkeypatch.setenv("OPENAI_API_KEY", "   ")
    keys = load_settings().provider_keys()
    assert keys.anthropic_api_key == "sk-test" and keys.openai_api_key is None


def test_end_of_input_before_a_character_exists_leaves_cleanly(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with in_thread(FakeLLMServer(api_key="k", models=("gpt-test",))) as srv:
        point_at(srv, tmp_path, monkeypatch)
        code, out, err = play(tmp_path, capsys)
    assert code == 0 and "No character made" in out and "Traceback" not in err


def test_keyboard_bytes_that_are_not_utf8_become_a_replacement_character(tmp_path, capsys, monkeypatch):
    """Python reads such bytes as lone surrogates (its surrogateescape), which no store or request can hold."""
    monkeypatch.setattr("sys.stdin", io.StringIO("Ar\udcffa\nfighter\n"))
    with in_thread(FakeLLMServer(api_key="k", models=("gpt-test",))) as srv:
        point_at(srv, tmp_path, monkeypatch)
        code, out, err = play(tmp_path, capsys)
    assert code == 0 and "Traceback" not in err, err
    assert "Ar\ufffda" in out and "The game is saved" in out


def test_a_login_name_of_bytes_that_are_not_utf8_is_a_name_a_database_can_hold(monkeypatch):
    from bot.cli import player_name

    monkeypatch.setattr("getpass.getuser", lambda: "pl\udcffayer")
    assert player_name() == "pl\ufffdayer"


def test_a_player_name_is_found_even_without_a_login(monkeypatch):
    from bot.cli import player_name

    def no_login():
        raise KeyError("getpwuid(): uid not found")

    monkeypatch.setattr("getpass.getuser", no_login)
    assert player_name() == "player"


def test_keyboard_play_with_an_openai_compatible_server(tmp_path, capsys, monkeypatch):
    """`lorekeeper play` from the keyboard, with OPENAI_BASE_URL pointing at a loopback fake server."""
    fake = FakeLLMServer([Step("The fog parts. <roll>1d20</roll>"), Step(" A gull screams.")], api_key="k", models=("gpt-test",))
    with in_thread(fake) as srv:
        point_at(srv, tmp_path, monkeypatch)
        monkeypatch.setattr("sys.stdin", io.StringIO("I look out to sea.\n/inventory\n"))
        code, out, err = play(tmp_path, capsys, "--name", "Aria", "--class", "fighter")
    assert code == 0, err
    assert "(the GM is thinking…)" in out and "GM:\n  The fog parts.  A gull screams.\n" in out  # streamed
    assert "1d20</roll>" not in out and "(revised)" not in out and "🎲 Aria: 1d20 →" in out and "Aria carries" in out
    assert "The game is saved" in out  # end of input saves and leaves
    assert [r.path for r in srv.requests if r.method == "POST"] == ["/v1/chat/completions"] * 2


def test_keyboard_play_with_a_bad_key_stops_at_start_up_with_one_clear_message(tmp_path, capsys, monkeypatch):
    with in_thread(FakeLLMServer(api_key="right")) as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        code, out, err = play(tmp_path, capsys, "--name", "Aria", "--class", "fighter")
    assert code == 2 and "refused the API key" in err and "ANTHROPIC_API_KEY" in err and "Traceback" not in err
    assert not [r for r in srv.requests if r.method == "POST"]  # stopped before any game request


def test_a_long_script_is_not_cut_short_by_a_summary(tmp_path, capsys, monkeypatch):
    config = tmp_path / "c.toml"
    config.write_text("[turn]\nsummarize_after = 10\nsummary_keep = 2\n")
    monkeypatch.setenv("LOREKEEPER_CONFIG", str(config))
    steps = [{"say": f"I look around, take {i}.", "replies": [f"You see fog, take {i}."]} for i in range(8)]
    script = tmp_path / "long.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Bo", "class": "rogue"}, "steps": steps}))
    code, out, err = play(tmp_path, capsys, "--script", str(script))
    assert code == 0, err
    assert "You see fog, take 7." in out


def test_base_urls_pasted_with_a_newline_are_trimmed(monkeypatch):
    from bot.settings import load_settings

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1\n")
    assert load_settings().provider_keys().openai_base_url == "http://127.0.0.1:9/v1"


def test_a_base_url_that_is_not_a_url_is_one_sentence(tmp_path, capsys, monkeypatch):
    for name, value, problem in [("ANTHROPIC_BASE_URL", "::x", "it must start with http"),
                                 ("OPENAI_BASE_URL", "http://[::1", "Invalid IPv6 URL"),
                                 ("OPENAI_BASE_URL", "http://localhost:99999/v1", "Port out of range"),
                                 ("OPENAI_BASE_URL", "http:///v1", "it names no host")]:
        monkeypatch.setenv(name, value)
        code, _, err = play(tmp_path, capsys, "--script", str(EXAMPLE))
        assert code == 2 and f"{name}: '{value}' is not a usable URL ({problem}" in err and "Traceback" not in err
        monkeypatch.delenv(name)


def test_the_example_script_plays_on_postgresql_and_analyze_reads_it(tmp_path, capsys, postgres_server):
    from tests.backends import BACKEND, store_at

    BACKEND["server"] = postgres_server
    try:
        url = store_at(tmp_path / "cli.db")
    finally:
        BACKEND["server"] = None
    code = main(["play", "--db", url, "--script", str(EXAMPLE), "--seed", "1", "--game", "pg"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "Coin: 9 gp" in out.out and not (tmp_path / "data" / "lorekeeper.db").exists()
    assert main(["analyze", "--db", url]) == 0
    assert "turns" in capsys.readouterr().out


def test_a_database_setting_that_is_neither_a_path_nor_postgresql_is_one_sentence(tmp_path, capsys, monkeypatch):
    for value, said in (("mysql://db/x", "'mysql://' is not a database Lorekeeper uses"),
                        ("postgresql://host:notaport/x", "the PostgreSQL URL cannot be read"),
                        ("postgresql:///x", "the PostgreSQL URL names no host")):
        monkeypatch.setenv("LOREKEEPER_DB", value)
        assert main(["play", "--script", str(EXAMPLE)]) == 2
        assert said in " ".join(capsys.readouterr().err.split())


def test_a_database_path_that_is_a_directory_is_one_sentence(tmp_path, monkeypatch):
    import subprocess
    import sys

    # In a child process: the traceback came from aiosqlite's thread after the event loop had closed.
    (tmp_path / "data").mkdir()
    env = {**__import__("os").environ, "LOREKEEPER_DB": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-m", "bot.cli", "play", "--script", str(EXAMPLE)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "is a directory; give a file name" in done.stderr
    assert "Traceback" not in done.stderr and "Event loop is closed" not in done.stderr
    file = tmp_path / "plain"
    file.write_text("x")
    env["LOREKEEPER_DB"] = str(file / "game.db")  # its folder is a file: cannot be made
    done = subprocess.run([sys.executable, "-m", "bot.cli", "play", "--script", str(EXAMPLE)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Cannot open the database" in done.stderr and "Traceback" not in done.stderr


def test_a_line_the_terminal_never_answered_is_reported_when_the_game_resumes(tmp_path, capsys):
    import asyncio
    import random

    from engine import Deps, Engine, ScriptedModel, Store, load_config
    from engine.basics import AgentType
    from engine.state import Message
    from tests.conftest import CORPUS

    async def crashed_run() -> None:
        async with Store.open(tmp_path / "t.db") as store:
            engine = Engine(Deps(store, {a: ScriptedModel() for a in AgentType}, load_config(), CORPUS, rng=random.Random(1)))
            await engine.start_game("terminal:terminal")
            await engine.create_character("terminal:terminal", "local", "Aria", "fighter")
            session = await engine.session("terminal:terminal")
            store.instance = "killed"  # as if the process that took the line had died
            await store.begin_turn(session.id, Message(channel_id="terminal:terminal", author_id="local",
                                                       author_name="me", agent=AgentType.PLAYER, text="I dive in."))

    asyncio.run(crashed_run())
    code, out, err = play(tmp_path, capsys, "--script", str(EXAMPLE), "--game", "terminal")
    assert code == 0, err
    assert "interrupted (the program stopped) before answering me: “I dive in.”" in " ".join(out.split())
    code, out, err = play(tmp_path, capsys, "--script", str(EXAMPLE))
    assert "interrupted" not in out  # once


def test_analyze_prints_tools_suggestions_verifier_and_tokens(tmp_path, capsys):
    code, _, err = play(tmp_path, capsys, "--script", str(EXAMPLE), "--seed", "1")
    assert code == 0, err
    assert main(["analyze", "--db", str(tmp_path / "t.db")]) == 0
    out = capsys.readouterr().out
    assert "turns (0 failed) in 1 channel(s)." in out
    assert "modify_inventory" in out and "start_quest" in out and "High-confidence suggestions followed:" in out
    assert "Verifier misses:" in out and "narrative" in out and "input tokens" in out
    assert main(["analyze", "--db", str(tmp_path / "t.db"), "--since", "2999-01-01"]) == 0
    assert "No turns recorded since 2999-01-01." in capsys.readouterr().out
    assert main(["analyze", "--db", str(tmp_path / "none.db")]) == 2
    assert "no database" in capsys.readouterr().err
    try:
        main(["analyze", "--since", "yesterday"])
        raise AssertionError("argparse should refuse the date")
    except SystemExit as exc:
        assert exc.code == 2 and "is not a day like" in capsys.readouterr().err


def test_the_terminal_shows_no_raw_markdown_when_it_reprints_or_resumes(tmp_path, capsys):
    told = "**Fog** rolls in. ~~No~~ one comes.\n\n| Boat | Crew |\n|---|---|\n| Gull | 3 |\n\nSee [the chart](chart.png)."
    script = tmp_path / "md.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Aria", "class": "fighter"}, "steps": [
        {"say": "I look out.", "replies": [told]}, {"say": "I wait.", "replies": ["*Gulls* cry."]}, {"say": "/undo"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--game", "md")
    assert code == 0, err
    reprinted = out.split("Undone: 1 turn.")[1]
    assert "Fog rolls in. No one comes." in reprinted and "Boat │ Crew" in reprinted and "Gull │ 3" in reprinted
    assert "the chart (chart.png)" in reprinted and not set("*~|[") & set(reprinted.replace("Undone", ""))
    script.write_text(yaml.safe_dump({"steps": [{"say": "/status"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--game", "md")
    resumed = out.split("Resuming")[1].split("/status")[0]
    assert code == 0 and "Fog rolls in." in resumed and not set("*~|[") & set(resumed), resumed


def test_the_terminal_undoes_and_retries_turns(tmp_path, capsys):
    script = tmp_path / "undo.yaml"
    script.write_text("""
character: {name: Aria, class: fighter}
steps:
  - say: I pocket a gold coin from the fountain.
    replies: ['You fish one out. <modify_inventory currency="gp" quantity="1"/>', " It is cold."]
  - say: /undo
  - say: /undo
  - say: I wait by the water.
    replies: ["The tide turns."]
  - say: /retry
    replies: ["Gulls cry overhead."]
  - say: /undo two
  - say: /inventory
""", encoding="utf-8")
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--seed", "1")
    assert code == 0, err
    assert "Undone: 1 turn. Back at turn 0" in out and "There is no turn to undo in this game." in out
    assert "Asking the GM again…" in out and "Gulls cry overhead." in out
    assert "Usage: /undo or /undo 3" in out and "Coin: 10 gp" in out  # the pocketed coin was taken back


async def test_the_name_prompt_takes_help_and_quit_and_suggests_a_class(tmp_path):
    import random

    from bot.terminal import Terminal
    from engine import Deps, Engine, ScriptedModel, Store, load_config
    from engine.basics import AgentType
    from tests.conftest import CORPUS

    answers = ["/help", "", "fighter", "Aria", "figther", "Aria", "fighter"]
    shown: list[str] = []

    async def ask(prompt: str) -> str:
        shown.append(prompt)
        return answers.pop(0)

    async with Store.open(tmp_path / "t.db") as store:
        engine = Engine(Deps(store, {a: ScriptedModel() for a in AgentType}, load_config(), CORPUS, rng=random.Random(1)))
        terminal = Terminal(engine, "terminal:t", "local", "me", out=shown.append, ask=ask)
        await terminal.open(None)
        await terminal.ensure_character(None, None)
        answers.append("/quit")
        quitter = Terminal(engine, "terminal:u", "local", "me", out=shown.append, ask=ask)
        await quitter.open(None)
        with pytest.raises(EOFError):  # play_keyboard then says the game is saved and leaves
            await quitter.ensure_character(None, None)
    text = "\n".join(shown)
    assert "First, your character: a name, then a class." in text  # /help is not a name
    assert "A character's name must be 1 to 40 characters long." in text  # nor is an empty line
    assert "'figther' is not a class I know. Did you mean fighter?" in text
    assert "Aria the human fighter joins the story" in text and answers == []


def test_the_history_of_typed_lines_is_kept_between_sessions(tmp_path):
    readline = pytest.importorskip("readline")
    from bot.terminal import line_editing

    history = tmp_path / "data" / "terminal_history"
    readline.clear_history()
    save = line_editing(history)
    readline.add_history("I open the door.")
    save()
    readline.clear_history()
    line_editing(history)
    assert readline.get_history_item(readline.get_current_history_length()) == "I open the door."


def test_a_stream_shows_the_speaker_once_then_grows_and_says_when_it_starts_over():
    from bot.terminal import Stream

    written: list[str] = []
    stream = Stream(written.append)
    stream.show("GM", "")  # nothing visible yet: still thinking
    stream.show("GM", "The tide")
    stream.show("GM", "The tide turns.\nGulls")
    stream.show("GM", "The")  # a retried generation starts its part again
    stream.show("GM", "The tide turns.")
    stream.close()
    text = "".join(written)
    assert text.startswith("(the GM is thinking…)\r") and text.count("GM:\n  ") == 1
    assert "The tide turns.\n  Gulls" in text and "(… starting that again)\n  The tide turns.\n" in text
    assert stream.matches("The  tide *turns*.") and not stream.matches("The tide ebbs.")


async def test_keyboard_turns_stream_and_a_failed_turn_still_ends_its_line(tmp_path):
    import random

    from bot.terminal import Terminal
    from engine import Deps, Engine, ScriptedModel, Store, load_config
    from engine.errors import ModelError
    from engine.basics import AgentType
    from tests.conftest import CORPUS

    model = ScriptedModel(chunk_size=4)
    written: list[str] = []
    printed: list[str] = []

    async def no_sleep(_: float) -> None:
        return None

    async with Store.open(tmp_path / "t.db") as store:
        engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, rng=random.Random(1),
                             sleep=no_sleep))
        terminal = Terminal(engine, "terminal:t", "local", "me", out=printed.append, write=written.append)
        await terminal.open(None)
        await terminal.ensure_character("Aria", "fighter")
        model.add("The harbour is quiet. <roll>1d20</roll>", " Nothing stirs.")
        await terminal.handle("I listen.")
        streamed = "".join(written)
        assert "GM:\n  The harbour is quiet.  Nothing stirs.\n" in streamed and len(written) > 4
        assert any(line.startswith("    🎲 Aria: 1d20 →") for line in printed) and "(revised)" not in " ".join(printed)
        written.clear()
        model.add(["The door ", ModelError("down", retryable=False)])
        await terminal.handle("I open the door.")
        assert "".join(written).endswith("The door \n")  # the half-told line is ended before the apology
        assert any("nothing" in line.lower() or "again" in line.lower() for line in printed[-2:])
        assert any("quill snaps" in line for line in printed) and not any("*" in line for line in printed)
        for replies in (["\n\n  The gulls cry. The tide turns slowly in the harbour."],  # starts with whitespace
                        ["<roll>1d20</roll>", "\n The gulls cry over the harbour."],  # starts with a tag
                        ["  <roll>1d20</roll>", "   The gulls cry over the harbour."]):
            written.clear()
            model.add(*replies)
            await terminal.handle("I listen again.")
            streamed = "".join(written)
            assert "starting that again" not in streamed and streamed.count("GM:") == 1, streamed
            assert "\n  The gulls cry" in streamed, streamed


def test_keyboard_play_logs_to_a_file_not_the_game_screen(tmp_path, capsys, monkeypatch):
    fake = FakeLLMServer([Step("The fog parts.")], api_key="k", models=("gpt-test",))
    with in_thread(fake) as srv:
        point_at(srv, tmp_path, monkeypatch)
        monkeypatch.setenv("LOREKEEPER_LOG_LEVEL", "info")
        monkeypatch.setattr("sys.stdin", io.StringIO("I look out to sea.\n"))
        code, out, err = play(tmp_path, capsys, "--name", "Aria", "--class", "fighter")
    assert code == 0, err
    assert "The fog parts." in out and "turn_done" not in out + err and "migration_applied" not in out + err
    log = (tmp_path / "lorekeeper.log").read_text("utf-8")
    assert "migration_applied" in log and "turn_done" in log


async def test_ctrl_c_during_a_turn_stops_that_turn_and_the_game_goes_on(tmp_path):
    import asyncio
    import random

    from bot.terminal import Terminal
    from engine import Deps, Engine, ScriptedModel, Store, load_config
    from engine.basics import AgentType
    from tests.conftest import CORPUS

    model = ScriptedModel(chunk_size=4, latency=0.02)
    written: list[str] = []
    printed: list[str] = []
    async with Store.open(tmp_path / "t.db") as store:
        engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, rng=random.Random(1)))
        terminal = Terminal(engine, "terminal:t", "local", "me", out=printed.append, write=written.append)
        await terminal.open(None)
        await terminal.ensure_character("Aria", "fighter")
        before = (await engine.state("terminal:t")).model_dump_json()
        model.add("The tide rolls in slowly, wave after wave after wave, <modify_inventory currency=\"gp\" quantity=\"5\"/>")
        playing = asyncio.create_task(terminal.handle("I wait for the tide."))
        while "The tide" not in "".join(written):
            await asyncio.sleep(0.01)
        terminal.interrupt()  # what Ctrl-C does while a turn runs
        assert await playing is True  # the game goes on
        assert any(line.startswith("Stopped: nothing of that turn happened.") for line in printed)
        assert (await engine.state("terminal:t")).model_dump_json() == before
        session = await engine.session("terminal:t")
        [words] = [m for m in await store.messages(session.id, include_failed=True) if m.text == "I wait for the tide."]
        assert words.status == "failed"  # kept, and not left pending for a restart to call "interrupted"
        model.latency = 0
        model.add("The gulls wheel.")
        await terminal.handle("I look up.")
        assert "The gulls wheel." in "".join(written)


def test_help_loads_nothing_but_the_standard_library():
    import subprocess
    import sys

    probe = ("import sys\nfrom bot import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
             "heavy = ('engine', 'd20', 'pydantic', 'discord', 'chromadb', 'structlog', 'asyncio', 'yaml', 'rich')\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parent.parent)
    assert "usage: lorekeeper" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]", done.stderr


def test_adventure_check_lists_every_problem_and_fails_until_they_are_fixed(tmp_path, capsys):
    folder = tmp_path / "corpus" / "adventures" / "tiny"
    folder.mkdir(parents=True)
    (folder / "adventure.yaml").write_text(
        "id: tiny\ntitle: T\nintro: hi\nstart_location: quay\nlocations:\n"
        "  - {id: quay, name: Quay, description: d, exits: [{to: mil}]}\n  - {id: mill, name: Mill, description: d}\n"
        "npcs:\n  - {id: tom, name: Tom, persona: p, hp: many, location: quay}\n")
    assert main(["adventure", "check", str(tmp_path / "corpus")]) == 1
    out = capsys.readouterr().out
    assert out.endswith("adventure.yaml: 2 problems\n  - npcs[tom].hp: must be a whole number (got 'many')\n"
                        "  - location 'quay' has an exit to unknown location 'mil' (did you mean 'mill'?)\n")
    text = (folder / "adventure.yaml").read_text().replace("hp: many", "hp: 8").replace("to: mil}", "to: mill}")
    (folder / "adventure.yaml").write_text(text)
    assert main(["adventure", "check", str(folder)]) == 0 and capsys.readouterr().out.endswith("adventure.yaml: good\n")
    assert main(["adventure", "check", str(tmp_path)]) == 2
    assert "No adventure found at" in capsys.readouterr().err


def test_checks_and_saves_from_the_sheet_at_the_keyboard(tmp_path, capsys):
    script = tmp_path / "c.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Bo", "class": "rogue"}, "steps": [
        {"say": "/check stealth adv"}, {"say": "/save int"}, {"say": "/check"}, {"say": "/check stelth"},
        {"say": "/sheet"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--seed", "2")
    assert code == 0, err
    out = " ".join(out.split())  # as wrapped to the screen
    assert re.search(r"🎲 Bo: Stealth check \(proficient\) 1d20\+5 adv → \d+ \(2d20kh1", out)
    assert re.search(r"🎲 Bo: Intelligence saving throw \(proficient\) 1d20\+4 → \d+", out)
    assert "Say what to roll: /check stealth" in out and "Did you mean stealth?" in out
    # an alley runner: sleight of hand and stealth from the background, so the class takes two more of its list
    assert "Proficiency +2 · saves: Dexterity, Intelligence · skills: Perception (expertise), Deception (expertise), Acrobatics, " \
           "Investigation, Sleight of Hand, Stealth" in out


def test_a_character_file_is_played_at_the_keyboard(tmp_path, capsys, monkeypatch):
    sheet = tmp_path / "vex.json"
    sheet.write_text('{"name": "Vex", "class": "rogue", "level": 5, "currency": {"gp": 99}}')
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"steps": [{"say": "/sheet"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--character", str(sheet))
    assert code == 2 and "Characters begin at level 1 at most in this game" in err  # levels come from play
    config = tmp_path / "five.toml"
    config.write_text("[game]\nstarting_level = 5\n")  # this table's house rule: new characters start at 5
    monkeypatch.setenv("LOREKEEPER_CONFIG", str(config))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--character", str(sheet))
    assert code == 0, err
    assert "Vex the human rogue joins the story, from vex.json." in out and "level 5 human rogue" in out and "99 gp" in out
    sheet.write_text('{"name": "Vex", "clas": "rogue"}')
    code, _, err = play(tmp_path, capsys, "--script", str(script), "--character", str(sheet))
    assert code == 2 and "class: is required but missing" in err and "'clas' is not a field here" in err
    sheet.write_text("{not json")
    code, _, err = play(tmp_path, capsys, "--script", str(script), "--character", str(sheet))
    assert code == 2 and "is not JSON" in err
    for hostile, said in (("[" * 40_000 + "]" * 40_000, "nests lists or objects deeper than the parser follows"),
                          ('{"name": "Vex", "class": "rogue", "max_hp": ' + "9" * 5000 + "}", "a number too long"),
                          ('{"name": "Vex", "class": "rogue", "max_hp": 1e30}', "max_hp: "),
                          ('{"name": "Vex", "class": "rogue", "currency": {"gp": 1000000000000}}',
                           "currency: 1,000,000,000,000 gp in all is more than a character may bring")):
        sheet.write_text(hostile)
        code, _, err = play(tmp_path, capsys, "--script", str(script), "--character", str(sheet))
        assert code == 2 and said in err and "Traceback" not in err, err


def test_scores_for_a_new_character_at_the_keyboard(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Bo", "class": "rogue"}, "steps": [{"say": "/sheet"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--scores", "8 15 14 12 13 10")
    assert code == 0, err
    assert "Bo the human rogue joins the story (ability scores: the standard array)." in " ".join(out.split())


def test_species_background_attacks_and_levels_at_the_keyboard(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Tor", "class": "fighter", "background": "dockhand"},
                                      "steps": [{"say": "/attack light crossbow at Ysolde adv"}, {"say": "/attack longsword"},
                                                {"say": "/attack rapier Ysolde"}, {"say": "/attack"},
                                                {"say": "/levelup"}, {"say": "/award 300 for the bridge"},
                                                {"say": "/levelup roll"}, {"say": "/levelup twice"}, {"say": "/sheet"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--species", "half-orc", "--seed", "3")
    assert code == 0, err
    out = " ".join(out.split())  # as wrapped to the screen
    assert "Tor the half-orc fighter joins the story." in out
    assert re.search(r"⚔️ Tor attacks Ysolde Marrick with light crossbow: 1d20\+3 adv → \d+ vs AC 10, .*19 crossbow "
                     r"bolts left\.", out)
    assert re.search(r"⚔️ Tor attacks with longsword: 1d20\+5 → -?\d+ to hit.*; damage \dd8\+3(\+1d8)? → \d+ slashing if "
                     r"it hits\.", out)  # a natural 20: a half-orc's Savage Attacks adds a die
    assert "Tor cannot attack: Tor carries no rapier." in out and "Say which weapon: /attack longsword" in out
    assert "Tor has 0 XP; level 2 needs 300 (300 more). XP comes from play" in out
    assert "Tor gains 300 XP for the bridge. Tor has earned a level: the player may take it with /levelup." in out
    assert re.search(r"⬆️ Tor reaches level 2: \+\d+ HP \(rolled 1d10 → \d+, CON \+2\), max HP \d+\. New: Action Surge", out)
    assert "Usage: /levelup (average hit points) or /levelup roll; at an Ability Score Improvement" in out
    assert re.search(r"Tor — level 2 half-orc fighter, dockhand", out) and "19 (chain mail, defense style, shield)" in out
    assert re.search(r"longsword +\+5 +1d8\+3 slashing +versatile", out) and "Relentless Endurance" in out
    assert "Wharf Friends" in out and "Languages: Common, Orc, Dwarvish" in out


def test_spells_cast_at_the_keyboard_and_shown_on_the_sheet(tmp_path, capsys):
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Bo", "class": "wizard"}, "steps": [
        {"say": "/cast magic missile at Ysolde Marrick level 1"}, {"say": "/cast fire bolt on Ysolde dis"},
        {"say": "/cast firebolt at Ysolde"}, {"say": "/cast shield level 3"}, {"say": "/cast"}, {"say": "/sheet"}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script), "--seed", "2")
    assert code == 0, err
    out = " ".join(out.split())  # as wrapped to the screen
    assert re.search(r"✨ Bo casts Magic Missile \(1st-level slot\) at Ysolde Marrick\. Dart 1 \(Ysolde Marrick\): 1d4\+1 → \d+ force", out)
    assert "✨ Bo casts Fire Bolt at Ysolde Marrick. Spell attack 1d20+5 dis →" in out
    assert "'firebolt' is not a spell I know (the SRD's cantrips to 3rd level; did you mean Fire Bolt?)." in out
    assert "Bo has no 3rd-level spell slots. Slots left: 1st 1/2." in out and "Say what to cast: /cast fire bolt" in out
    assert "Intelligence · spell attack +5 · save DC 13 · slots 1st 1/2 Cantrips: Fire Bolt, Mage Hand, Light " \
           "Prepared: Magic Missile (1st), Shield (1st), Mage Armor (1st), Sleep (1st)" in out


async def test_undo_at_the_keyboard_asks_before_taking_back_your_own_rest(tmp_path):
    import random

    from bot.terminal import Terminal
    from engine import Deps, Engine, ScriptedModel, Store, load_config
    from engine.basics import AgentType
    from tests.conftest import CORPUS

    answers: list[str] = []
    shown: list[str] = []

    async def ask(prompt: str) -> str:
        shown.append(prompt)
        return answers.pop(0)

    model = ScriptedModel()
    async with Store.open(tmp_path / "t.db") as store:
        engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, rng=random.Random(1)))
        terminal = Terminal(engine, "terminal:t", "local", "me", out=shown.append, ask=ask)
        await terminal.open(None)
        await engine.create_character("terminal:t", "local", "Aria", "fighter")
        model.add("The tide turns.")
        await terminal.play("I wait for the tide.")
        await terminal.commands["/rest"]("short")
        answers.append("no")
        await terminal.commands["/undo"]("")
        assert "Aria takes a short rest." in "\n".join(shown) and "Nothing was undone." in shown
        assert (await engine.state("terminal:t")).turn == 2  # the turn and the rest both stand
        answers.append("yes")
        await terminal.commands["/undo"]("")
        assert (await engine.state("terminal:t")).turn == 0 and answers == []


def test_play_indexes_the_shipped_lore_on_first_start_and_only_what_changed_after(tmp_path, capsys, monkeypatch):
    import shutil

    from tests.conftest import CORPUS

    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    monkeypatch.setenv("LOREKEEPER_CORPUS", str(corpus))
    monkeypatch.setenv("LOREKEEPER_LORE_INDEX", "auto")  # as shipped
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"character": {"name": "Aria", "class": "fighter"},
                                      "steps": [{"say": "Who brews the ale at the Brine Cup?", "replies": ["Odile."]}]}))
    code, out, err = play(tmp_path, capsys, "--script", str(script))
    assert code == 0, err
    assert "Indexing the lore for the first time" in err and "21 file(s): 21 new or changed" in err
    from engine.lore.index import LoreIndex

    index = LoreIndex(tmp_path / "lore")  # beside the database
    assert len(index) > 50 and index.search("who brews the ale", k=1)[0].chunk.source.endswith("brine-cup.md")
    code, out, err = play(tmp_path, capsys, "--script", str(script))  # nothing changed: nothing said, nothing embedded
    assert code == 0 and "Lore" not in err and "Indexing" not in err, err
    town = corpus / "adventures" / "saltmere-lantern" / "lore" / "town.md"
    town.write_text(town.read_text() + "\n## The New Pier\nA pier of pale oak, built this spring.\n")
    code, out, err = play(tmp_path, capsys, "--script", str(script))
    assert code == 0 and "Lore indexed in" in err and "1 new or changed, 20 unchanged" in err, err
    shutil.rmtree(corpus / "world")  # a corpus that loses files: they leave the index
    code, out, err = play(tmp_path, capsys, "--script", str(script))
    assert code == 0 and "removed" in err, err
