"""The `lorekeeper` command: `play` in a terminal, `bot` on Discord.

Only the standard library loads before the arguments are parsed, so `--help` and argument errors answer at
once; each command imports what it uses."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import random
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine import Engine, ScriptedModel
    from engine.models import ModelClient
    from engine.basics import AgentType

    from .terminal.session import Script


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="lorekeeper", description="Lorekeeper, an AI game master for D&D-style play.")
    sub = top.add_subparsers(dest="command", required=True)
    play = sub.add_parser("play", help="play in this terminal", description="Play a game in this terminal. "
                          "The game is saved in the database and resumes next time.")
    play.add_argument("--script", type=Path, help="play a YAML script (player lines and scripted model replies) without a keyboard")
    play.add_argument("--game", help="which saved terminal game to play (default: terminal; with --script, a fresh "
                      "throwaway game unless this is given)")
    play.add_argument("--adventure", help="adventure id for a new game (default: the starter)")
    play.add_argument("--premise", help="a new world from a sentence (\"a haunted mining town in the mountains\"), "
                                        "made by the world-builder, saved in the corpus, and played")
    play.add_argument("--name", help="your character's name, for a new character")
    play.add_argument("--class", dest="char_class", help="your character's class, for a new character")
    play.add_argument("--scores", help="ability scores for a new character: standard (default), roll (4d6 drop "
                      "lowest), or six numbers STR DEX CON INT WIS CHA (the standard array in any order, or a point buy)")
    play.add_argument("--species", help="a new character's species: human (default), dwarf, elf, halfling, "
                      "dragonborn, gnome, half-elf, half-orc, tiefling")
    play.add_argument("--background", help="a new character's background (default: the class's usual one): acolyte, "
                      "alley runner, dockhand, minstrel, scholar, sellsword, wanderer")
    play.add_argument("--character", type=Path, help="a JSON character file to play, for a new character "
                      "(docs/character-format.md)")
    play.add_argument("--db", help="database file or postgresql:// URL (default: LOREKEEPER_DB or data/lorekeeper.db)")
    play.add_argument("--seed", type=int, help="seed for a new game's dice, to replay a session exactly")
    bot = sub.add_parser("bot", help="run the Discord bot", description="Run the Discord bot (settings: .env.example).")
    bot.add_argument("--db", help="database file or postgresql:// URL (default: LOREKEEPER_DB or data/lorekeeper.db)")
    lore = sub.add_parser("lore", help="build and search the lore index",
                          description="The lore the agents consult: Markdown, text and PDF files under the corpus.")
    lore_sub = lore.add_subparsers(dest="lore_command", required=True)
    ingest = lore_sub.add_parser("ingest", help="index the corpus (only files that changed are embedded again)")
    ingest.add_argument("path", nargs="?", type=Path, help="corpus folder (default: LOREKEEPER_CORPUS or corpus/)")
    search = lore_sub.add_parser("search", help="the ranked passages for a query, as the agents get them")
    search.add_argument("query", nargs="+")
    search.add_argument("--k", type=int, default=5, help="how many passages (default 5)")
    search.add_argument("--scope", choices=["adventure", "world"], help="only this scope")
    search.add_argument("--gm", action="store_true", help="include GM-only sections")
    search.add_argument("--json", action="store_true", help="a JSON list of objects (source, heading, slice, text, score, ...)")
    analyze = sub.add_parser("analyze", help="what the turn log says about tools, suggestions and the verifier",
                             description="Tables from the turn log: per tool, suggested vs called; how often "
                             "high-confidence suggestions were followed; verifier misses; tokens per agent.")
    analyze.add_argument("--channel", help="one channel (a Discord channel id, or terminal:<game>)")
    analyze.add_argument("--since", type=_date, help="only turns since this day (YYYY-MM-DD)")
    analyze.add_argument("--db", help="database file or postgresql:// URL (default: LOREKEEPER_DB or data/lorekeeper.db)")
    adventure = sub.add_parser("adventure", help="check adventure files",
                               description="Adventures are YAML files (docs/adventure-format.md describes them).")
    adventure_sub = adventure.add_subparsers(dest="adventure_command", required=True)
    check = adventure_sub.add_parser("check", help="report every problem of adventure files in one pass")
    check.add_argument("path", nargs="?", type=Path,
                       help="an adventure.yaml, its folder, or a corpus folder to check every adventure in "
                            "(default: LOREKEEPER_CORPUS or corpus/)")
    world = sub.add_parser("world", help="what play added to a game's world: list, edit, remove, export",
                           description="People, places and things the GM made in play (create_npc, create_location, "
                           "create_item): list them, correct or remove them, or export the whole world as an "
                           "adventure file that `lorekeeper adventure check` accepts.")
    world.add_argument("--game", default="terminal", help="a terminal game's name (default: terminal), or "
                       "discord:<channel id> for a Discord channel's game")
    world.add_argument("--db", help="database file or postgresql:// URL (default: LOREKEEPER_DB or data/lorekeeper.db)")
    world_sub = world.add_subparsers(dest="world_command", required=True)
    world_sub.add_parser("list", help="every addition, a line each")
    remove = world_sub.add_parser("remove", help="take an addition out of the world")
    remove.add_argument("kind", choices=["npc", "location", "item"])
    remove.add_argument("ref", help="its id or name")
    edit = world_sub.add_parser("edit", help="correct one field of an addition")
    edit.add_argument("kind", choices=["npc", "location", "item"])
    edit.add_argument("ref", help="its id or name")
    edit.add_argument("field", help="npc: name, role, persona, attitude, location; location: name, description; "
                      "item: name, description, price")
    edit.add_argument("value")
    export = world_sub.add_parser("export", help="the world as played, as an adventure file")
    export.add_argument("--id", help="the new adventure's id (default: <adventure>-as-played)")
    export.add_argument("--title", help="its title")
    export.add_argument("-o", "--output", type=Path, help="write it here (default: print it)")
    return top


async def run_world(args: argparse.Namespace) -> None:
    from engine import ConfigError, Deps, Engine, ScriptedModel, Store
    from engine.basics import AgentType

    from .settings import configure_logging, load_settings

    settings = load_settings(db=args.db)
    configure_logging(settings.log_level)
    if isinstance(settings.database, Path) and not settings.database.is_file():
        raise ConfigError(f"There is no database at {settings.db} yet: play a game first.")
    channel = args.game.removeprefix("discord:") if args.game.startswith("discord:") else f"terminal:{args.game}"
    async with Store.open(settings.database) as store:
        model = ScriptedModel()  # no model is asked: this only reads and corrects the saved world
        engine = Engine(Deps(store, {a: model for a in AgentType}, settings.engine_config(), settings.corpus))
        if args.world_command == "list":
            print("\n".join(await engine.world_additions(channel)) or "Nothing has been made in play in this game yet.")
        elif args.world_command in ("remove", "edit"):
            print(await engine.world_change(channel, player_name(), args.world_command, args.kind, args.ref,
                                            getattr(args, "field", ""), getattr(args, "value", "")))
        else:
            text = await engine.world_export(channel, args.id, args.title)
            if args.output is None:
                print(text, end="")
            else:
                args.output.parent.mkdir(parents=True, exist_ok=True)
                args.output.write_text(text, "utf-8")
                print(f"Wrote {args.output}: check it with `lorekeeper adventure check {args.output}`.")


def run_adventure_check(args: argparse.Namespace) -> int:
    """Every problem of every adventure found at the path; exit 1 when there is any."""
    from engine.content import check_adventure, list_adventures
    from engine.errors import ConfigError

    from .settings import load_settings

    path = args.path or load_settings().corpus
    if path.is_file():
        files = [path]
    elif (path / "adventure.yaml").is_file():
        files = [path / "adventure.yaml"]
    else:
        files = list(list_adventures(path).values())
        if not files:
            raise ConfigError(f"No adventure found at {path}: give an adventure.yaml, its folder, or a corpus folder "
                              f"holding adventures/<id>/adventure.yaml.")
    bad = 0
    for file in files:
        found = check_adventure(file)
        if found:
            bad += 1
            print(f"{file}: {len(found)} problem{'s' if len(found) > 1 else ''}")
            print("\n".join(f"  - {p}" for p in found))
        else:
            print(f"{file}: good")
    return 1 if bad else 0


def _date(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a day like 2026-11-23") from None


async def run_analyze(args: argparse.Namespace) -> None:
    from engine import ConfigError, Store, load_config
    from engine.analysis import analyze, render

    from .settings import configure_logging, load_settings

    settings = load_settings(db=args.db)
    configure_logging(settings.log_level)
    if isinstance(settings.database, Path) and not settings.database.is_file():
        raise ConfigError(f"There is no database at {settings.db} yet: play a game first.")
    async with Store.open(settings.database) as store:
        turns = await store.turns_for_analysis(args.channel, args.since)
    print(render(analyze(turns, load_config(settings.config).prices), args.since))


def run_lore(args: argparse.Namespace) -> None:
    import json

    from engine import ConfigError
    from engine.lore.index import LoreIndex  # chromadb and the embedding model load only for this command

    from .settings import configure_logging, load_settings

    settings = load_settings()
    configure_logging(settings.log_level)
    index = LoreIndex(settings.lore_path, chroma_host=settings.chroma_host)
    if args.lore_command == "ingest":
        corpus = args.path or settings.corpus
        if not corpus.is_dir():
            raise ConfigError(f"The corpus folder {corpus} does not exist.")
        report = index.ingest(corpus, progress=sys.stderr.isatty())
        print(report.summary())
        return
    if not 1 <= args.k <= 100:
        raise ConfigError("--k is between 1 and 100.")
    if not len(index):
        raise ConfigError("The lore index is empty: run `lorekeeper lore ingest` first.")
    hits = index.search(" ".join(args.query), args.k, scope=args.scope, gm=args.gm)
    if args.json:
        print(json.dumps([h.as_dict() for h in hits], ensure_ascii=False, indent=2))
        return
    if not hits:
        print("Nothing relevant found.")
    for n, hit in enumerate(hits, 1):
        flag = " (GM only)" if hit.chunk.gm_only else ""
        print(f"[{n}] {hit.chunk.heading}{flag}  score {hit.score:.4f}\n    {hit.chunk.address}  ({hit.chunk.source}, chunk {hit.chunk.id})")
        print(textwrap.indent(textwrap.shorten(hit.chunk.text, 400), "    "))


async def run_discord(args: argparse.Namespace) -> None:
    from .main import run_bot  # discord.py loads only for the bot
    from .settings import configure_logging, load_settings

    settings = load_settings(db=args.db)
    configure_logging(settings.log_level if settings.log_level != "warning" else "info")
    await run_bot(settings)


async def run_play(args: argparse.Namespace) -> None:
    from engine import GameError, ScriptedModel
    from engine.providers import build_models, check_models
    from engine.basics import AgentType

    from .runtime import running_engine
    from .settings import configure_logging, load_settings
    from .terminal import Terminal, load_script, play_keyboard, play_script, read_line

    settings = load_settings(db=args.db)
    # At the keyboard the screen is the game's: logs go to a file beside the database (a script's go to stderr).
    configure_logging(settings.log_level, None if args.script else settings.data_dir / "lorekeeper.log")
    config = settings.engine_config()
    script = load_script(args.script) if args.script else None
    model = ScriptedModel()
    if script is not None:
        models: dict[AgentType, ModelClient] = {a: model for a in AgentType}
        # A summary would take the next step's scripted reply; scripted sessions are short, so none is made.
        config = config.model_copy(update={"turn": config.turn.model_copy(update={"summarize_after": 5000})})
    else:
        models = build_models(config, settings.provider_keys())
        print("Checking the language model ...", file=sys.stderr)
        await check_models(config, models)
    rng = random.Random(args.seed) if args.seed is not None else random.Random()
    # A script plays in a game of its own, ended when it is done (its log is kept), so the demo works every time
    # and never takes over a game someone is playing; --game names one to play (or resume) instead.
    throwaway = script is not None and args.game is None
    game = f"script-{rng.getrandbits(32):08x}" if throwaway else (args.game or "terminal")
    async with running_engine(settings, config, models, rng, say=lambda text: print(text, file=sys.stderr),
                              progress=sys.stderr.isatty()) as engine:
        terminal = Terminal(engine, f"terminal:{game}", "local", player_name(), ask=None if script else read_line,
                            write=None if script else _write, color=colour_screen())
        terminal.character_file, terminal.scores = args.character, args.scores
        if args.premise:
            args.adventure = await make_world(engine, terminal.channel, args, script, model)
            if script is not None:
                script.adventure = args.adventure
        terminal.species, terminal.background = args.species, args.background
        if script is not None:
            try:
                await play_script(terminal, script, model, args.seed)
            finally:
                if throwaway:
                    with contextlib.suppress(GameError):
                        await engine.end_game(f"terminal:{game}")
        else:
            await play_keyboard(terminal, args.adventure, args.name, args.char_class, args.seed,
                                history=settings.data_dir / "terminal_history")


async def make_world(engine: Engine, channel: str, args: argparse.Namespace, script: Script | None,
                     model: ScriptedModel) -> str:
    """The adventure id of a new world from --premise (refused while a game runs here: it would not be played)."""
    from engine import ConfigError
    from engine.errors import NoGameRunning

    if args.adventure or (script is not None and script.adventure):
        raise ConfigError("Give --adventure or --premise, not both.")
    with contextlib.suppress(NoGameRunning):
        await engine.state(channel)
        raise ConfigError("A game is running in this terminal: --premise makes a new one. End it with /new, or "
                          "play elsewhere with --game NAME.")
    if script is not None:
        model.add(*script.world)
    print("Building a world from your premise (up to two minutes with the local model) ...", file=sys.stderr)
    world = await engine.make_world(args.premise)
    print(f"A new world: {world.title}, saved in corpus/adventures/{world.id}/ ({len(world.locations)} places, "
          f"{len(world.npcs)} people); play it again with --adventure {world.id}.", file=sys.stderr)
    return world.id


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def colour_screen() -> bool:
    """Whether standard output is a terminal that takes colour codes (NO_COLOR, TERM=dumb and pipes say no)."""
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM", "") != "dumb"


def player_name() -> str:
    try:
        from engine.jsonio import well_formed  # a login name of bytes that are not UTF-8 holds lone surrogates
        return well_formed(getpass.getuser()) or "player"
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        return "player"


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    import asyncio

    from engine.errors import GameError

    try:
        if args.command == "play":
            asyncio.run(run_play(args))
        elif args.command == "bot":
            asyncio.run(run_discord(args))
        elif args.command == "lore":
            run_lore(args)
        elif args.command == "analyze":
            asyncio.run(run_analyze(args))
        elif args.command == "world":
            asyncio.run(run_world(args))
        elif args.command == "adventure":
            return run_adventure_check(args)
    except GameError as exc:
        print(f"lorekeeper: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nThe game is saved. Until next time.", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
