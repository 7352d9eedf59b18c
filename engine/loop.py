"""The tool loop: stream an agent's reply, stop at each complete tool tag, run it, and continue with its observation."""

from __future__ import annotations

import asyncio
import time
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Awaitable, Callable

import structlog

from . import jsonio
from .errors import ModelError
from .models import ChatMessage, Completion, ModelClient, ModelRequest, Usage, estimate_tokens
from .prose import finalize, streaming
from .tags import TagEvent, TagScanner
from .tools import TOOLS, ToolCall, ToolContext, arun_tool

log = structlog.get_logger(__name__)

CONTINUE = "Continue your reply from exactly where you stopped, using the observation. Do not repeat what you already wrote."
RESUME = "Continue your reply from exactly where you stopped. Do not repeat what you already wrote."


@dataclass(frozen=True)
class Limits:
    tool_quota: int = 8  # successful tool calls a turn may make
    max_rounds: int = 10  # continuations a turn may take, counting failed tags
    retries: int = 2  # further attempts at a generation that failed with a retryable error
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    generation_timeout: float = 180.0  # seconds one generation may take in all (a read timeout resets on every chunk)


@dataclass
class ModelCall:
    """Accounting for one generation request."""

    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    estimated: bool
    latency_ms: float
    stop_reason: str
    attempts: int = 1
    agent: str = ""  # whose request it was (a turn may hold a referee's call and the narrator's)

    def as_record(self) -> dict[str, object]:
        """Its fields as the turn log stores them (all plain values: dataclasses.asdict's deep copy is not needed)."""
        return dict(vars(self))


@dataclass
class AgentRun:
    # ("model", text), ("observation", tag), or ("resume", "") after a generation cut short by a stray closing tag
    segments: list[tuple[str, str]] = field(default_factory=list)
    prose: list[str] = field(default_factory=list)  # what players see of each generation, rendered by the scanner
    calls: list[ToolCall] = field(default_factory=list)
    model_calls: list[ModelCall] = field(default_factory=list)
    rounds: int = 0  # continuations so far: after tool calls, and after generations cut by a stray closing tag

    @property
    def transcript(self) -> str:
        return "".join(text for _, text in self.segments)

    @property
    def reply(self) -> str:
        return finalize("".join(self.prose))


@dataclass
class Generation:
    """One generation read to its first tag event (or its end), and what players see of the text before it."""

    text: str
    event: TagEvent | None
    prose: str
    completion: Completion | None
    early: Usage | None

    @property
    def stray_stop(self) -> str | None:
        """The closing tag a provider stopped at when no tag was open: the reply was cut, not finished."""
        c = self.completion
        if self.event is None and c is not None and c.stop_reason == "stop_sequence" and (c.stop_sequence or "").startswith("</"):
            return c.stop_sequence
        return None


Sleep = Callable[[float], Awaitable[None]]


Show = Callable[[str], None]  # told the whole visible reply so far, each time it grows (or starts over)


async def run_agent(model: ModelClient, base: ModelRequest, ctx: ToolContext, limits: Limits = Limits(),
                    sleep: Sleep = asyncio.sleep, run: AgentRun | None = None, show: Show | None = None,
                    tools: bool = True) -> AgentRun:
    """Run one agent's turn to completion; tools act on ctx.state, which the caller commits or discards.

    Pass `run` to keep its accounting even when the turn fails with an exception. `show`, when given, is called
    with what players would see of the reply so far (tags, thinking and observations hidden) as it streams; a
    retried generation starts its part again, so the text may also get shorter. Without `tools`, tags in the
    reply are hidden and never run, as when a turn's tool calls are spent.
    """
    run = run if run is not None else AgentRun()
    finishing = not tools
    stray: set[str] = set()  # closing tags the model wrote with no tag open: no longer stops for this turn
    while True:
        request = _continuation(base, run.segments, model.supports_prefill)
        if finishing:  # tags are stripped now, not run: a stop at a closing tag would cut the reply short
            request = replace(request, stop=[s for s in request.stop if not s.startswith("</")])
        elif stray:
            request = replace(request, stop=[s for s in request.stop if s not in stray])
        gen = await _generate(model, request, run, finishing, limits, sleep, show)
        event = gen.event
        if event is None or finishing:
            run.segments.append(("model", gen.text))
            run.prose.append(gen.prose)
            if gen.stray_stop is None:
                return run
            # The provider stopped at a closing tag that closed nothing: the model was still writing. Go on.
            stray.add(gen.stray_stop)
            run.segments.append(("resume", ""))
            run.rounds += 1
            finishing = finishing or run.rounds >= limits.max_rounds
            continue
        if event.kind == "observation":  # the model began to invent a result itself: its reply ends there
            run.segments.append(("model", gen.text[: event.start]))
            run.prose.append(gen.prose)
            return run
        run.segments.append(("model", gen.text[: event.end]))
        run.prose.append(gen.prose)
        finishing = await _call_tool(event, ctx, run, limits)


async def _call_tool(event: TagEvent, ctx: ToolContext, run: AgentRun, limits: Limits) -> bool:
    """Run the tag (or refuse it past the quota); True when the agent must now finish without tools."""
    if sum(1 for c in run.calls if c.ok) >= limits.tool_quota:
        call = ToolCall(event.name, dict(event.attrs), False,
                        f"Error: the limit of {limits.tool_quota} tool calls a turn is reached; nothing was done. "
                        "Finish your reply now without tools.")
        finishing = True
    else:
        call = await arun_tool(event, ctx)
        finishing = run.rounds + 1 >= limits.max_rounds
        if finishing:
            call.observation += " (That was the last tool call this turn: finish your reply now, without tools.)"
    run.calls.append(call)
    run.rounds += 1
    run.segments.append(("observation", call.observation_tag()))
    log.debug("tool_called", tool=call.name, ok=call.ok, agent=ctx.agent.value)
    return finishing


def _continuation(base: ModelRequest, segments: list[tuple[str, str]], prefill: bool) -> ModelRequest:
    if not segments:
        return base
    if prefill:
        return replace(base, prefill="".join(text for _, text in segments))
    messages = list(base.messages)
    for kind, text in segments:
        if kind == "model":
            messages.append(ChatMessage("assistant", text))
        elif kind == "resume":
            messages.append(ChatMessage("user", RESUME))
        else:
            messages.append(ChatMessage("user", f"{text}\n{CONTINUE}"))
    return replace(base, messages=messages)


async def _generate(model: ModelClient, request: ModelRequest, run: AgentRun, finishing: bool, limits: Limits,
                    sleep: Sleep, show: Show | None = None) -> Generation:
    """One generation, retried on retryable errors (an empty first reply is one); returns it to its first tag event."""
    attempt = 0
    while True:
        attempt += 1
        started = time.perf_counter()
        try:
            try:
                async with asyncio.timeout(limits.generation_timeout):
                    gen = await _read_stream(model, request, finishing, show, "".join(run.prose))
            except TimeoutError:
                raise ModelError(f"{model.provider} took longer than {limits.generation_timeout:.0f} s", retryable=True) from None
            if not run.segments and not gen.text.strip():
                # Not a word: a provider fault like any other, not a reply.
                raise ModelError(f"{model.provider} sent an empty reply", retryable=True)
        except ModelError as exc:
            # Each failed attempt was a request too: it goes in the turn log.
            latency = (time.perf_counter() - started) * 1000
            run.model_calls.append(ModelCall(model.provider, request.model or getattr(model, "default_model", ""),
                                             0, 0, 0, True, round(latency, 2), f"error: {exc}"[:200], attempt,
                                             request.agent.value))
            if not exc.retryable or attempt > limits.retries:
                raise
            delay = exc.retry_after if exc.retry_after is not None else limits.backoff * 2 ** (attempt - 1)
            log.warning("model_retry", provider=model.provider, attempt=attempt, delay=delay, error=str(exc))
            await sleep(delay)
            continue
        latency = (time.perf_counter() - started) * 1000
        completion, early, text = gen.completion, gen.early, gen.text
        usage = completion.usage if completion and completion.usage else None
        if usage is not None:
            usage_in, usage_out, cached, estimated = usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.estimated
        elif early is not None:  # cut short at a tag: the provider's input figures, and the output we saw
            usage_in, usage_out, cached, estimated = early.input_tokens, estimate_tokens(text), early.cache_read_tokens, True
        else:
            prompt = request.system_text() + "".join(m.content for m in request.messages) + request.prefill
            usage_in, usage_out, cached, estimated = estimate_tokens(prompt), estimate_tokens(text), 0, True
        run.model_calls.append(ModelCall(model.provider, request.model or getattr(model, "default_model", ""), usage_in,
                                         usage_out, cached, estimated, round(latency, 2),
                                         completion.stop_reason if completion else "tool_tag", attempt, request.agent.value))
        return gen


async def _read_stream(model: ModelClient, request: ModelRequest, finishing: bool, show: Show | None = None,
                       before: str = "") -> Generation:
    """Stream until the first tag event (finishing: until an invented observation or the end, tags stripped)."""
    scanner = TagScanner(TOOLS, calls=not finishing)  # finishing: tags are only hidden, so no call is built
    shown = -1
    event: TagEvent | None = None
    completion: Completion | None = None
    early: Usage | None = None
    async with aclosing(model.stream(request)) as stream:  # leaving the block cancels the generation
        async for item in stream:
            if isinstance(item, Usage):
                early = item
                continue
            if isinstance(item, Completion):
                completion = item
                break
            # Untrusted text: a lone surrogate (a JSON escape no UTF-8 can hold) would fail the turn at the store.
            event = _settle(scanner, scanner.feed(jsonio.well_formed(item)), finishing)
            if show is not None and len(prose := scanner.settled_prose()) != shown:
                shown = len(prose)
                show(streaming(before + prose))
            if event is not None:
                break
    if event is None and completion is not None and completion.stop_sequence:
        # Providers drop the stop sequence from the text; it closes the tag the model was writing (or closes nothing).
        event = _settle(scanner, scanner.feed(completion.stop_sequence), finishing)
    if event is None:
        event = _settle(scanner, scanner.finish(), finishing)
    if show is not None and len(scanner.prose()) != shown:
        show(streaming(before + scanner.prose()))
    return Generation(scanner.buf, event, scanner.prose(), completion, early)


def _settle(scanner: TagScanner, event: TagEvent | None, finishing: bool) -> TagEvent | None:
    """The event the loop acts on: any, or, when finishing, only an invented observation (tags are just hidden)."""
    while finishing and event is not None and event.kind != "observation":
        scanner.resume()
        event = scanner.advance()
    return event
