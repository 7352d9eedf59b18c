"""Settings from .env and the environment: mistakes are named, with the line and the closest real name."""

from __future__ import annotations

from pathlib import Path

from bot.settings import env_warnings, known_names, load_settings
from engine.state import AgentType


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
