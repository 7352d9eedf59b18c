"""The tool registry: typed functions, their argument models, and how a tag becomes a call."""

from __future__ import annotations

import inspect
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Union, get_type_hints

import structlog
from pydantic import BaseModel, ConfigDict, ValidationError

from .. import visibility
from ..errors import ToolError
from ..basics import AgentType
from ..entities import NPC, Location, Quest
from ..state import Character, GameState
from ..markup import escape, unescape
from ..rules import effects
from ..tags import TagEvent
from ..visibility import Viewer

log = structlog.get_logger(__name__)

Persistence = Literal["permanent", "turn"]
# What an agent reads after a call the game refused: the model must neither pretend it happened nor stay silent.
REFUSED = ("Nothing was done: this did not happen. If the call was wrong, fix it; otherwise tell the players plainly "
           "that it failed, and never narrate it as done.")
_CHILD = re.compile(r"\s*<([A-Za-z_][\w-]*)>(.*?)</\1>\s*", re.S)


class Args(BaseModel):
    """Base of tool argument models: unknown arguments are errors, not silently dropped."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


@dataclass
class ToolContext:
    """What a tool may act on: the turn's working copy of the state, the turn's dice, who acts, and the engine's deps."""

    state: GameState
    rng: random.Random
    agent: AgentType
    actor_id: str | None = None
    npc_id: str | None = None
    deps: Any = None  # the engine's Deps, for tools that need more than the state (a lore index, say)
    session_id: int | None = None  # the saved game this turn belongs to
    counters: dict[str, float] = field(default_factory=dict)  # per-turn tallies kept by tools (lore calls, tokens)
    passages: list[Any] = field(default_factory=list)  # lore the reply may cite as [n] (shared with the turn)
    meta: dict[str, Any] = field(default_factory=dict)  # filled by the tool being run, moved onto its ToolCall

    @property
    def viewer(self) -> Viewer:
        return Viewer(self.agent, self.npc_id, self.actor_id)

    def character(self, ref: str | None = None) -> Character:
        if ref:
            found = self.state.find_character(ref)
            if found is None:
                names = ", ".join(c.name for c in self.state.characters.values()) or "none yet"
                raise ToolError(f"there is no player character called '{ref}' (characters: {names})")
            return found
        if self.actor_id and self.actor_id in self.state.characters:
            return self.state.characters[self.actor_id]
        raise ToolError("name the character: the acting player has no character")

    def npc(self, ref: str) -> NPC:
        return visibility.find_npc(self.state, self.viewer, ref)

    def location(self, ref: str | None = None) -> Location:
        """A place the acting agent knows (where it stands by default)."""
        return visibility.find_location(self.state, self.viewer, ref)

    def quest(self, ref: str) -> Quest:
        return visibility.find_quest(self.state, self.viewer, ref)


ToolFunc = Callable[[ToolContext, Any], Union[str, Awaitable[str]]]


@dataclass(frozen=True)
class Tool:
    name: str
    func: ToolFunc  # plain, or async where the tool does I/O
    args: type[Args]
    description: str
    example: str
    agents: frozenset[AgentType]
    changes_state: bool
    persistence: Persistence
    body: str | None  # the argument a tag's plain-text body fills, as in <roll>1d20+3</roll>
    subject: Callable[[ToolContext, Any], str] | None = None  # a permanent result's entity, so it is kept once


TOOLS: dict[str, Tool] = {}

NARRATIVE, COMBAT, NPC_AGENT = AgentType.NARRATIVE, AgentType.COMBAT, AgentType.NPC
EVERY_AGENT = frozenset({NARRATIVE, COMBAT, NPC_AGENT})


def tool(*, example: str, agents: frozenset[AgentType] | set[AgentType], changes_state: bool,
         persistence: Persistence = "turn", body: str | None = None,
         subject: Callable[[ToolContext, Any], str] | None = None) -> Callable:
    """Register a function as a tool; its docstring is the description the agents read.

    A permanent tool names the entity its result is about (`subject`), so asking again replaces the note.
    """

    def register(func: ToolFunc) -> ToolFunc:
        hints = get_type_hints(func)
        args_model = hints.get("args")
        if not (inspect.isclass(args_model) and issubclass(args_model, Args)):
            raise TypeError(f"tool {func.__name__} must take `args` typed with an Args model")
        if body is not None and body not in args_model.model_fields:
            raise TypeError(f"tool {func.__name__}: body field {body!r} is not an argument")
        if persistence == "permanent" and subject is None:
            raise TypeError(f"tool {func.__name__}: a permanent tool names the subject its result is kept under")
        TOOLS[func.__name__] = Tool(
            name=func.__name__, func=func, args=args_model, description=inspect.getdoc(func) or "",
            example=example, agents=frozenset(agents), changes_state=changes_state,
            persistence=persistence, body=body, subject=subject)
        return func

    return register


@dataclass
class ToolCall:
    """One tool call of a turn, as logged and as the agent saw it answered."""

    name: str
    args: dict[str, Any]
    ok: bool
    observation: str
    persistence: Persistence = "turn"
    meta: dict[str, Any] = field(default_factory=dict)  # what a tool reports about itself (cache hit, latency, tokens)

    def observation_tag(self) -> str:
        return f"<observation>{escape(self.observation)}</observation>"


def parse_arguments(event: TagEvent, spec: Tool) -> dict[str, Any]:
    """Merge a tag's attributes with its body: a JSON object, child elements, or plain text."""
    args: dict[str, Any] = dict(event.attrs)
    body = event.body.strip()
    if not body:
        return args
    from_body: dict[str, Any]
    if body.startswith("{"):
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError as exc:
            raise ToolError(f"the JSON body of <{spec.name}> is not valid JSON ({exc.msg} at character {exc.pos})") from None
        except (ValueError, RecursionError):
            raise ToolError(f"the JSON body of <{spec.name}> cannot be read (too deep or too large)") from None
        if not isinstance(parsed, dict):
            raise ToolError(f"the JSON body of <{spec.name}> must be an object")
        from_body = parsed
    elif body.startswith("<"):
        if not _only_children(body):
            raise ToolError(f"cannot read the child elements of <{spec.name}>; write each argument as <name>value</name>")
        from_body = {}
        for m in _CHILD.finditer(body):
            key, value = m.group(1), unescape(m.group(2).strip())
            if key in from_body:
                existing = from_body[key]
                from_body[key] = [*existing, value] if isinstance(existing, list) else [existing, value]
            else:
                from_body[key] = [value] if _is_list_field(spec, key) else value
    else:
        if spec.body is None:
            raise ToolError(f"<{spec.name}> takes no text body; give its arguments as attributes, e.g. {spec.example}")
        from_body = {spec.body: unescape(body)}
    clash = sorted(set(args) & set(from_body))
    if clash:
        raise ToolError(f"<{spec.name}> gives '{clash[0]}' both as an attribute and in its body")
    args.update(from_body)
    return args


def _only_children(body: str) -> bool:
    pos = 0
    while pos < len(body):
        m = _CHILD.match(body, pos)
        if m is None or m.end() == pos:
            return False
        pos = m.end()
    return True


def _is_list_field(spec: Tool, key: str) -> bool:
    field = spec.args.model_fields.get(key)
    return field is not None and getattr(field.annotation, "__origin__", None) is list


def describe_error(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:4]:
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "is not an argument of this tool"
        parts.append(f"'{where}' {msg}" if where else msg)
    return "; ".join(parts)


def run_tool(event: TagEvent, ctx: ToolContext) -> ToolCall:
    """Carry out one tag against the context's state; any error leaves that state exactly as it was."""
    prepared = _prepare(event, ctx)
    if isinstance(prepared, ToolCall):
        return prepared
    spec, args, snapshot = prepared
    if inspect.iscoroutinefunction(spec.func):
        return ToolCall(spec.name, _dumped(args), False, f"Error: {spec.name} must be awaited; nothing was done.")
    try:
        observation = spec.func(ctx, args)
    except Exception as exc:
        return _failed(spec, args, ctx, snapshot, exc)
    return _done(spec, args, ctx, observation)  # type: ignore[arg-type]


async def arun_tool(event: TagEvent, ctx: ToolContext) -> ToolCall:
    """run_tool for the loop: the same checks and guarantees, and tools that do I/O are awaited."""
    return await _execute(_prepare(event, ctx), ctx)


async def arun_args(name: str, raw_args: dict[str, Any], ctx: ToolContext) -> ToolCall:
    """A call decided as data (a name and its arguments, e.g. a grammar-constrained plan) rather than written as a
    tag: the same checks and guarantees as arun_tool."""
    return await _execute(_prepare(TagEvent("call", name, 0, 0), ctx, raw_args), ctx)


async def _execute(prepared: ToolCall | tuple[Tool, Args, dict[str, Any] | None], ctx: ToolContext) -> ToolCall:
    if isinstance(prepared, ToolCall):
        return prepared
    spec, args, snapshot = prepared
    try:
        result = spec.func(ctx, args)
        observation = await result if inspect.isawaitable(result) else result
    except Exception as exc:
        return _failed(spec, args, ctx, snapshot, exc)
    return _done(spec, args, ctx, observation)


def _prepare(event: TagEvent, ctx: ToolContext, raw: dict[str, Any] | None = None
             ) -> ToolCall | tuple[Tool, Args, dict[str, Any] | None]:
    """The tool and its validated arguments (from the tag, or `raw` when given), or the error observation that
    refuses the call."""
    if event.kind in ("malformed", "unclosed"):
        return ToolCall(event.name, {}, False, f"Error: {event.error}. Nothing was done; write the tag again correctly.")
    spec = TOOLS.get(event.name)
    allowed = sorted(name for name, t in TOOLS.items() if ctx.agent in t.agents)
    shown = dict(raw) if raw is not None else dict(event.attrs)
    if spec is None:
        return ToolCall(event.name, shown, False,
                        f"Error: there is no tool called '{event.name}'. Nothing was done. Your tools: {', '.join(allowed)}.")
    if ctx.agent not in spec.agents:
        return ToolCall(spec.name, shown, False,
                        f"Error: {spec.name} is not available to the {ctx.agent.value} agent. Nothing was done. Your tools: {', '.join(allowed)}.")
    try:
        raw_args = parse_arguments(event, spec) if raw is None else raw
        args = spec.args.model_validate(raw_args)
    except ToolError as exc:
        return ToolCall(spec.name, shown, False, f"Error: {exc}. Nothing was done.")
    except ValidationError as exc:
        return ToolCall(spec.name, shown, False,
                        f"Error: bad arguments for {spec.name}: {describe_error(exc)}. Nothing was done. Example: {spec.example}")
    except (RecursionError, ValueError, TypeError):
        return ToolCall(spec.name, shown, False, f"Error: the arguments of {spec.name} cannot be read. Nothing was done.")
    snapshot = ctx.state.snapshot() if spec.changes_state else None
    if spec.changes_state or spec.persistence == "permanent":  # it changes the game, or keeps a note in it
        ctx.state.own()
    return spec, args, snapshot


def _dumped(args: Args) -> dict[str, Any]:
    return args.model_dump(mode="json", exclude_none=True)


def _failed(spec: Tool, args: Args, ctx: ToolContext, snapshot: dict[str, Any] | None, exc: Exception) -> ToolCall:
    _restore(ctx.state, snapshot)
    meta, ctx.meta = ctx.meta, {}
    if isinstance(exc, (ToolError, ValidationError)):
        message = describe_error(exc) if isinstance(exc, ValidationError) else str(exc).rstrip(".")
        if isinstance(exc, ToolError) and exc.public:
            meta["refused"] = exc.public  # what players read of it, under the reply (TurnResult.mechanics)
        return ToolCall(spec.name, _dumped(args), False, f"Error: {message}. {REFUSED}", meta=meta)
    log.error("tool_crashed", tool=spec.name, args=_dumped(args), exc_info=exc)
    return ToolCall(spec.name, _dumped(args), False, f"Error: {spec.name} failed unexpectedly. Nothing was done; carry on without it.")


class Told(str):
    """An observation that also says what players may see of it (the line under the reply): the agent reads the
    whole text (ids, hints, what to do next); players read `public`. A tool that returns a plain string shows
    players only its first sentence."""

    public: str

    def __new__(cls, text: str, public: str) -> "Told":
        told = super().__new__(cls, text)
        told.public = public
        return told


def _done(spec: Tool, args: Args, ctx: ToolContext, observation: str) -> ToolCall:
    if spec.changes_state:  # a spell whose caster lost concentration in this change ends with it, now
        lapsed = effects.settle(ctx.state)
        if lapsed:
            more = " " + " ".join(lapsed)
            public = getattr(observation, "public", None)
            observation = Told(observation + more, public + more) if public is not None else observation + more
    if spec.persistence == "permanent" and spec.subject is not None:
        # Kept once per entity and per viewer: an NPC's narrower view must not replace the GM's note.
        visibility.remember(ctx.state, ctx.viewer, spec.name, spec.subject(ctx, args), str(observation))
    meta, ctx.meta = ctx.meta, {}
    if isinstance(observation, Told):
        meta["public"] = observation.public
    return ToolCall(spec.name, _dumped(args), True, str(observation), spec.persistence, meta)


def _restore(state: GameState, snapshot: dict[str, Any] | None) -> None:
    if snapshot is not None:
        state.restore(snapshot)


def tools_for(agent: AgentType) -> list[Tool]:
    return [t for t in TOOLS.values() if agent in t.agents]
