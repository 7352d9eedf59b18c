"""Shared fixtures: the starter adventure's state, a tool-call helper, an engine on a real database, and the two
databases the store runs on (a module asks for both with `pytestmark = pytest.mark.usefixtures("backend")`)."""

from __future__ import annotations

import os
import random
import socket
import warnings
from pathlib import Path

import pytest

# Every turn a test plays checks that the state it was played from came out unchanged (engine/stages.py): set before
# the engine is imported, which reads it once.
os.environ["LOREKEEPER_CHECK_SHARED_STATE"] = "1"

from engine import Deps, Engine, ScriptedModel, Store, load_config
from engine.characters import make_character
from engine.content import find_adventure
from engine.basics import AgentType
from engine.state import GameState
from engine.tags import TagScanner
from engine.tools import TOOLS, ToolCall, ToolContext, run_tool
from tests.backends import BACKEND, store_at  # noqa: F401 (tests import store_at from here)

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
CHANNEL = "chan-1"
PROVIDER_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture(autouse=True)
def hermetic(tmp_path, monkeypatch):
    """No developer .env, no real keys, and no connection beyond loopback: no test reaches the internet."""
    monkeypatch.chdir(tmp_path)
    for name in [*PROVIDER_ENV, *(k for k in os.environ if k.startswith("LOREKEEPER_"))]:
        monkeypatch.delenv(name, raising=False)
    # Starting a game indexes the shipped corpus into a fresh folder (~10 s): tests of play and bot start-up use the
    # index as it is; the tests of that start-up step turn it back on.
    monkeypatch.setenv("LOREKEEPER_LORE_INDEX", "off")
    real_connect = socket.socket.connect

    def loopback_only(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        if sock.family in (socket.AF_INET, socket.AF_INET6) and host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"tests may not connect to {host}: loopback only")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL for the session, from the pgserver wheel (its binaries ship inside it).

    Its data lives in a folder of its own under the system's temporary directory, not pytest's: as root, pgserver
    runs the server as another user, who must reach the folder, and pytest keeps its own folders private (and
    prunes them when another pytest starts)."""
    import shutil
    import tempfile

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: no XDG_RUNTIME_DIR in CI containers
            import pgserver
    except ImportError:
        pytest.skip("PostgreSQL backend not tested: the pgserver package is not installed (pip install -e '.[dev]')")
    folder = Path(tempfile.mkdtemp(prefix="lorekeeper-pg-"))
    try:
        server = pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as exc:  # no binaries for this platform, no permission to run them, …
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"PostgreSQL backend not tested: pgserver could not start a server ({type(exc).__name__}: {exc})")
    yield server
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request):
    """Run the test once on SQLite and once on PostgreSQL: `store_at` gives the database for the backend."""
    BACKEND.update(name=request.param,
                    server=request.getfixturevalue("postgres_server") if request.param == "postgresql" else None)
    yield request.param
    BACKEND.update(name="sqlite", server=None)


def new_state(seed: int = 7) -> GameState:
    state = find_adventure(CORPUS, "saltmere-lantern").new_game(seed)
    for owner, name, cls in (("u1", "Aria", "fighter"), ("u2", "Bram", "wizard")):
        state.characters[owner] = make_character(owner, name, cls)
        state.party.player_ids.append(owner)
    return state


@pytest.fixture
def state() -> GameState:
    return new_state()


def ctx_for(state: GameState, agent: AgentType = AgentType.NARRATIVE, actor: str | None = "u1",
            npc: str | None = None, seed: int = 1) -> ToolContext:
    return ToolContext(state, random.Random(seed), agent, actor, npc)


def turn_of(state: GameState, name: str) -> GameState:
    """Make it `name`'s turn in the fight, a fresh one (its action, bonus action and reaction unused): tests act out
    of initiative order, the engine holds each turn to its actions."""
    at = next(i for i, p in enumerate(state.combat.order) if p.name == name)
    state.combat.turn_index = at
    state.combat.order[at].acted = []
    return state


def call(ctx: ToolContext, tag: str) -> ToolCall:
    """Run one tag as the loop would, from its text."""
    scanner = TagScanner(TOOLS)
    event = scanner.feed(tag) or scanner.finish()
    assert event is not None, f"no tag found in {tag!r}"
    return run_tool(event, ctx)


class Table:
    """An engine over a real database with a scripted model, and a started game with two characters."""

    def __init__(self, engine: Engine, model: ScriptedModel, store: Store) -> None:
        self.engine, self.model, self.store = engine, model, store

    async def turn(self, text: str, *replies, author: str = "u1", name: str = "bob"):
        self.model.add(*replies)
        return await self.engine.take_turn(CHANNEL, author, name, text)

    async def state(self) -> GameState:
        return await self.engine.state(CHANNEL)


async def make_table(db: Path, model: ScriptedModel | None = None, seed: int = 11, start: bool = True) -> tuple[Table, object]:
    ctx = Store.open(store_at(db))
    store = await ctx.__aenter__()
    model = model or ScriptedModel(chunk_size=7)

    async def no_sleep(_: float) -> None:
        return None

    engine = Engine(Deps(store, {a: model for a in AgentType}, load_config(), CORPUS, rng=random.Random(seed), sleep=no_sleep))
    if start:
        await engine.start_game(CHANNEL)
        await engine.create_character(CHANNEL, "u1", "Aria", "fighter")
        await engine.create_character(CHANNEL, "u2", "Bram", "wizard")
    return Table(engine, model, store), ctx


@pytest.fixture
async def table(tmp_path, request):
    if "backend" in request.fixturenames:  # the module runs on both databases: choose this run's first
        request.getfixturevalue("backend")
    t, ctx = await make_table(tmp_path / "game.db")
    yield t
    await ctx.__aexit__(None, None, None)
