"""The model seam: what the engine asks of a language model, and a scripted model for tests and replays."""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterable, Literal, Protocol, Union

from .errors import ModelError
from .basics import AgentType


@dataclass
class ChatMessage:
    role: Literal["user", "assistant"]
    content: str


@dataclass
class ModelRequest:
    """One generation: the system prompt in a stable (cacheable) and a per-turn part, history, and a prefill."""

    agent: AgentType
    model: str
    system: str
    context: str
    messages: list[ChatMessage]
    prefill: str = ""  # assistant text to continue from, for providers that support it
    stop: list[str] = field(default_factory=list)
    temperature: float = 0.7
    max_tokens: int = 1024
    seed: int | None = None
    tools: bool = True  # whether the agent may write tool tags (a two-step turn's narration may not)
    # A JSON schema the reply must follow. Providers that can hold a model to it do (the local model with a
    # grammar, OpenAI-compatible servers with response_format); the caller validates the reply either way.
    schema: dict[str, Any] | None = None

    def system_text(self) -> str:
        return f"{self.system}\n\n{self.context}" if self.context else self.system


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    estimated: bool = False


@dataclass
class Completion:
    """The last item of a stream: why generation stopped, and what it cost."""

    stop_reason: Literal["end", "stop_sequence", "max_tokens"] = "end"
    stop_sequence: str | None = None
    usage: Usage | None = None  # None: the provider reported none, and the loop estimates it


StreamItem = Union[str, Usage, Completion]  # a Usage may come early, before the stream is cut short


class ModelClient(Protocol):
    """A language model that streams text (and may report usage early). Closing the stream cancels the generation."""

    provider: str
    supports_prefill: bool

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]: ...


def estimate_tokens(text: str) -> int:
    """About four characters a token, for providers that report no usage."""
    return max(1, len(text) // 4) if text else 0


Reply = Union[str, list[Union[str, Exception]], Exception, Callable[[ModelRequest], Union[str, list[str]]]]


class ScriptedModel:
    """A model that answers from a queue of replies and records every request it saw.

    A reply is a string (streamed in chunks of `chunk_size`), a list of chunks (ending, if you like, in an
    exception: the stream breaks there), an exception to raise,
    or a function of the request. Stop sequences are honoured as a real provider would.
    """

    provider = "scripted"

    def __init__(self, replies: Iterable[Reply] = (), *, chunk_size: int = 16, supports_prefill: bool = True,
                 latency: float = 0.0, model: str = "scripted") -> None:
        self.replies: deque[Reply] = deque(replies)
        self.requests: list[ModelRequest] = []
        self.chunk_size = chunk_size
        self.supports_prefill = supports_prefill
        self.latency = latency
        self.model = model
        self.closed_early = 0
        self.exhausted = False  # a request found no reply left

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.requests.append(request)
        if not self.replies:
            self.exhausted = True
            raise ModelError("the scripted model has no reply left for this request")
        reply = self.replies.popleft()
        if callable(reply) and not isinstance(reply, Exception):
            reply = reply(request)
        if isinstance(reply, Exception):
            raise reply
        chunks = list(reply) if isinstance(reply, list) else _split(reply, self.chunk_size)
        fault = chunks.pop() if chunks and isinstance(chunks[-1], Exception) else None  # a stream cut mid-way
        chunks, stop = _cut_at_stop(chunks, request.stop)
        finished = False
        try:
            for chunk in chunks:
                if self.latency:
                    await asyncio.sleep(self.latency)
                yield chunk
            if fault is not None:
                raise fault
            finished = True
            text = "".join(chunks)
            prompt = request.system_text() + "".join(m.content for m in request.messages) + request.prefill
            yield Completion("stop_sequence" if stop else "end", stop,
                             Usage(estimate_tokens(prompt), estimate_tokens(text), estimated=True))
        finally:
            if not finished:
                self.closed_early += 1


def _split(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _cut_at_stop(chunks: list[str], stops: list[str]) -> tuple[list[str], str | None]:
    text = "".join(chunks)
    hits = [(text.find(s), s) for s in stops if s and text.find(s) >= 0]
    if not hits:
        return chunks, None
    at, stop = min(hits)
    out, used = [], 0
    for chunk in chunks:
        if used + len(chunk) >= at:
            out.append(chunk[: at - used])
            break
        out.append(chunk)
        used += len(chunk)
    return [c for c in out if c], stop
