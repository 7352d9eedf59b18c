"""Settings from .env and the environment: mistakes are named, with the line and the closest real name."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import env_warnings, known_names, load_settings
from engine.errors import ConfigError
from engine.basics import AgentType


def test_a_bad_line_and_a_misspelt_name_are_named_and_the_lines_after_still_count(tmp_path, capsys):
    Path(".env").write_text("# comment\nLOREKEEPER_DB=a.db\nthis is junk\nLOREKEEPER_LOG_LEVLE=info\n"
                            "LOREKEEPER_LOG_LEVEL=error\nexport LOREKEEPER_DEBUG=true\nOPENAI_BASE_URL=\n", encoding="utf-8")
    settings = load_settings()
    assert settings.database == Path("a.db") and settings.log_level == "error" and settings.debug is True
    err = " ".join(capsys.readouterr().err.split())
    assert ".env line 3: 'this is junk' is not NAME=value, so it is skipped (the lines after it still count)." in err
    assert ".env line 4: LOREKEEPER_LOG_LEVLE is not a setting: did you mean LOREKEEPER_LOG_LEVEL?" in err
    assert "could not parse" not in err  # python-dotenv's own line is replaced by ours


def test_unknown_names_in_the_environment_are_named_too(tmp_path):
    found = env_warnings(Path("none"), {"LOREKEEPER_DATABSE": "x", "LOREKEEPER_ZZZ": "y", "PATH": "/bin"})
    assert found == ["environment: LOREKEEPER_DATABSE is not a setting (.env.example lists them).",
                     "environment: LOREKEEPER_ZZZ is not a setting (.env.example lists them)."] or \
        "did you mean" in found[0]
    assert "LOREKEEPER_MODEL" in known_names() and "OPENAI_BASE_URL" in known_names()


def test_the_env_example_lists_only_real_settings():
    example = Path(__file__).resolve().parent.parent / ".env.example"
    assert env_warnings(example, {}) == []


def test_one_model_setting_names_every_agents_model_unless_the_config_names_one(tmp_path, monkeypatch):
    monkeypatch.setenv("LOREKEEPER_MODEL", "llama3.1")
    config = load_settings().engine_config()
    assert {config.agent(a).model for a in (AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC,
                                             AgentType.SUMMARIZER)} == {"llama3.1"}
    own = tmp_path / "c.toml"
    own.write_text('[agents.npc]\nmodel = "qwen2.5"\n', encoding="utf-8")
    monkeypatch.setenv("LOREKEEPER_CONFIG", str(own))
    config = load_settings().engine_config()
    assert config.agent(AgentType.NPC).model == "qwen2.5" and config.agent(AgentType.NARRATIVE).model == "llama3.1"


def test_a_postgresql_database_keeps_local_files_in_data(monkeypatch):
    monkeypatch.setenv("LOREKEEPER_DB", " postgresql://keeper:pw@db:5432/lore ")
    settings = load_settings()
    assert settings.database == "postgresql://keeper:pw@db:5432/lore"
    assert settings.data_dir == Path("data") and settings.lore_path == Path("data/lore")
    monkeypatch.setenv("LOREKEEPER_DB", "games/table.db")
    assert load_settings().lore_path == Path("games/lore")


def test_shard_ids_read_as_ranges_and_lists_below_the_count(monkeypatch):
    monkeypatch.setenv("LOREKEEPER_SHARD_COUNT", "8")
    for text, ids in (("0-3", (0, 1, 2, 3)), ("0,1,2", (0, 1, 2)), ("5", (5,)), (" 6 - 7 , 0 ", (0, 6, 7))):
        monkeypatch.setenv("LOREKEEPER_SHARD_IDS", text)
        settings = load_settings()
        assert settings.shard_ids == ids and settings.shard_count == 8
    monkeypatch.delenv("LOREKEEPER_SHARD_IDS")
    assert load_settings().shard_ids is None  # a count alone: this process runs every shard of it
    monkeypatch.delenv("LOREKEEPER_SHARD_COUNT")
    settings = load_settings()
    assert settings.shard_ids is None and settings.shard_count is None  # neither: Discord recommends the count
    Path(".env").write_text("LOREKEEPER_SHARD_COUNT=4\nLOREKEEPER_SHARD_IDS=1-2\n", encoding="utf-8")
    settings = load_settings()
    assert settings.shard_ids == (1, 2) and settings.shard_count == 4


@pytest.mark.parametrize("count, ids, said", [
    (None, "0", "- shard_ids: LOREKEEPER_SHARD_IDS needs LOREKEEPER_SHARD_COUNT, the number of shards of every process"),
    ("2", "2", "- shard_ids: shard 2 is not below LOREKEEPER_SHARD_COUNT=2: shard ids run from 0 to 1"),
    ("4", "0-9", "- shard_ids: shard 9 is not below LOREKEEPER_SHARD_COUNT=4: shard ids run from 0 to 3"),
    ("4", "3-1", "- shard_ids: '3-1' runs backwards; write it like 1-3"),
    ("4", "0,3-1", "- shard_ids: '3-1' in '0,3-1' runs backwards; write it like 1-3"),
    ("4", "0-2,1", "- shard_ids: '0-2,1' lists shard 1 more than once"),
    ("4", "one", "- shard_ids: 'one' is not a list of shard ids; write it like 0-3 or 0,2,5"),
    ("4", "-1", "- shard_ids: '-1' is not a list of shard ids; write it like 0-3 or 0,2,5"),
    ("4", "[0, 1]", "- shard_ids: '[0, 1]' is not a list of shard ids; write it like 0-3 or 0,2,5"),
    ("0", None, "- shard_count: must be at least 1 (got '0')"),
    ("two", "0", "- shard_count: must be a whole number (got 'two')"),
])
def test_bad_shard_settings_are_one_clear_line_each(monkeypatch, count, ids, said):
    for name, value in (("LOREKEEPER_SHARD_COUNT", count), ("LOREKEEPER_SHARD_IDS", ids)):
        if value is not None:
            monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert message.startswith("A setting is invalid (see .env.example):\n") and said in message
    assert len(message.splitlines()) == 2  # a bad count is not reported a second time through the ids


def test_shard_settings_are_known_names_with_a_did_you_mean():
    assert {"LOREKEEPER_SHARD_COUNT", "LOREKEEPER_SHARD_IDS"} <= known_names()
    found = env_warnings(Path("none"), {"LOREKEEPER_SHARDS_IDS": "0", "LOREKEEPER_SHARD_CONT": "2"})
    assert found == ["environment: LOREKEEPER_SHARDS_IDS is not a setting: did you mean LOREKEEPER_SHARD_IDS?",
                     "environment: LOREKEEPER_SHARD_CONT is not a setting: did you mean LOREKEEPER_SHARD_COUNT?"]
