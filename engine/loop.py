"""The tool loop: stream an agent's reply, stop at each complete tool tag, run it, and continue with its observation."""

from __future__ import annotations

import asyncio
import time
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Awaitable, Callable

import structlog

from .errors import ModelError
from .models import ChatMessage, Completion, ModelClient, ModelRequest, Usage, estimate_tokens
from .tags import TagEvent, TagScanner, visible_text
from .tools import TOOLS, ToolCall, ToolContext, run_tool

log = structlog.get_logger(__name__)

CONTINUE = "Continue your reply from exactly where you stopped, using the observation. Do not repeat what you already wrote."


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


@dataclass
class AgentRun:
    segments: list[tuple[str, str]] = field(default_factory=list)  # ("model", text) or ("observation", tag)
    prose: list[str] = field(default_factory=list)  # model text outside tags, for the reply
    calls: list[ToolCall] = field(default_factory=list)
    model_calls: list[ModelCall] = field(default_factory=list)

    @property
    def transcript(self) -> str:
        return "".join(text for _, text in self.segments)

    @property
    def reply(self) -> str:
        return visible_text("".join(self.prose))


Sleep = Callable[[float], Awaitable[None]]


async def run_agent(model: ModelClient, base: ModelRequest, ctx: ToolContext, limits: Limits = Limits(),
                    sleep: Sleep = asyncio.sleep, run: AgentRun | None = None) -> AgentRun:
    """Run one agent's turn to completion; tools act on ctx.state, which the caller commits or discards.

    Pass `run` to keep its accounting even when the turn fails with an exception.
    """
    run = run if run is not None else AgentRun()
    finishing = False
    while True:
        request = _continuation(base, run.segments, model.supports_prefill)
        if finishing:  # tags are stripped now, not run: a stop at a closing tag would cut the reply short
            request = replace(request, stop=[s for s in request.stop if not s.startswith("</")])
        text, event = await _generate(model, request, run, finishing, limits, sleep)
        if finishing or event is None:
            run.segments.append(("model", text))
            run.prose.append(text)
            return run
        if event.kind == "observation":  # the model began to invent a result itself: its reply ends there
            run.segments.append(("model", text[: event.start]))
            run.prose.append(text[: event.start])
            return run
        run.segments.append(("model", text[: event.end]))
        run.prose.append(text[: event.start])
        finishing = _call_tool(event, ctx, run, limits)


def _call_tool(event: TagEvent, ctx: ToolContext, run: AgentRun, limits: Limits) -> bool:
    """Run the tag (or refuse it past the quota); True when the agent must now finish without tools."""
    if sum(1 for c in run.calls if c.ok) >= limits.tool_quota:
        call = ToolCall(event.name, dict(event.attrs), False,
                        f"Error: the limit of {limits.tool_quota} tool calls a turn is reached; nothing was done. "
                        "Finish your reply now without tools.")
        finishing = True
    else:
        call = run_tool(event, ctx)
        finishing = len(run.calls) + 1 >= limits.max_rounds
        if finishing:
            call.observation += " (That was the last tool call this turn: finish your reply now, without tools.)"
    run.calls.append(call)
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
        else:
            messages.append(ChatMessage("user", f"{text}\n{CONTINUE}"))
    return replace(base, messages=messages)


async def _generate(model: ModelClient, request: ModelRequest, run: AgentRun, finishing: bool, limits: Limits,
                    sleep: Sleep) -> tuple[str, TagEvent | None]:
    """One generation, retried on retryable errors; returns its text and the first tag event in it."""
    attempt = 0
    while True:
        attempt += 1
        started = time.perf_counter()
        try:
            try:
                async with asyncio.timeout(limits.generation_timeout):
                    text, event, completion, early = await _read_stream(model, request, finishing)
            except TimeoutError:
                raise ModelError(f"{model.provider} took longer than {limits.generation_timeout:.0f} s", retryable=True) from None
        except ModelError as exc:
            # Each failed attempt was a request too: it goes in the turn log.
            latency = (time.perf_counter() - started) * 1000
            run.model_calls.append(ModelCall(model.provider, request.model or getattr(model, "default_model", ""),
                                             0, 0, 0, True, round(latency, 2), f"error: {exc}"[:200], attempt))
            if not exc.retryable or attempt > limits.retries:
                raise
            delay = exc.retry_after if exc.retry_after is not None else limits.backoff * 2 ** (attempt - 1)
            log.warning("model_retry", provider=model.provider, attempt=attempt, delay=delay, error=str(exc))
            await sleep(delay)
            continue
        latency = (time.perf_counter() - started) * 1000
        usage = completion.usage if completion and completion.usage else None
        if usage is not None:
            usage_in, usage_out, cached, estimated = usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.estimated
        elif early is not None:  # cut short at a tag: the provider's input figures, and the output we saw
            usage_in, usage_out, cached, estimated = early.input_tokens, estimate_tokens(text), early.cache_read_tokens, True
        else:
            prompt = request.system_text() + "".join(m.content for m in request.messages) + request.prefill
            usage_in, usage_out, cached, estimated = estimate_tokens(prompt), estimate_tokens(text), 0, True
        run.model_calls.append(ModelCall(model.provider, request.model or getattr(model, "default_model", ""), usage_in, usage_out, cached, estimated, round(latency, 2),
                                         completion.stop_reason if completion else "tool_tag", attempt))
        return text, event


async def _read_stream(model: ModelClient, request: ModelRequest, finishing: bool
                       ) -> tuple[str, TagEvent | None, Completion | None, Usage | None]:
    scanner = TagScanner(TOOLS)
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
            event = scanner.feed(item)
            if event is not None and not finishing:
                break
    if finishing:
        return strip_tags(scanner.buf), None, completion, early
    if event is None and completion is not None and completion.stop_sequence:
        # Providers drop the stop sequence from the text; it closes the tag the model was writing.
        event = scanner.feed(completion.stop_sequence)
    if event is None:
        event = scanner.finish()
    return scanner.buf, event, completion, early


def strip_tags(text: str) -> str:
    """Remove every tool tag from finished text, and anything after an invented observation."""
    scanner = TagScanner(TOOLS)
    scanner.buf = text
    kept, pos = [], 0
    while (event := scanner.finish()) is not None:
        kept.append(text[pos:event.start])
        if event.kind == "observation":
            return "".join(kept)
        pos = event.end
        scanner.resume(event.end)
    kept.append(text[pos:])
    return "".join(kept)
