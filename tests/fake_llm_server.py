"""A loopback HTTP server that speaks the Anthropic Messages and OpenAI Chat Completions APIs from a script.

Each request pops the next scripted Step; every request is recorded (path, headers, JSON body).
Streams are real SSE in each API's event format, so the real SDKs parse real responses.
"""

from __future__ import annotations

import asyncio
import json
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass
class Step:
    """What the server does for one request."""

    text: str = ""  # the reply, streamed in chunks of `chunk` characters
    status: int = 200
    error: dict[str, Any] | None = None  # error body for a non-200 status
    headers: dict[str, str] = field(default_factory=dict)
    chunk: int = 8
    stop_reason: str = "end_turn"  # Anthropic: end_turn, stop_sequence, max_tokens; mapped for OpenAI
    stop_sequence: str | None = None
    cut_after: int | None = None  # close the connection after this many text chunks: a stream cut mid-way
    delay: float = 0.0  # seconds to wait before answering (for timeouts)
    usage: tuple[int, int] = (120, 30)  # input, output tokens
    cache_read: int = 0
    cache_write: int = 0
    midstream_error: dict[str, Any] | None = None  # an error event after the first text chunk, inside a 200 stream
    gate: threading.Event | None = None  # after `gate_after` text chunks, the stream waits until this is set
    gate_after: int = 1
    inject: list[str] = field(default_factory=list)  # raw SSE events sent after the first text chunk
    keep_alive: bool = False  # stream with chunked encoding and keep the connection for the next request


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    connection: int = 0  # which TCP connection carried it, numbered from 1


class FakeLLMServer:
    def __init__(self, steps: list[Step] | None = None, *, api_key: str = "test-key", models: tuple[str, ...] = ("claude-test", "gpt-test"),
                 models_html: bool = False) -> None:
        self.steps: list[Step] = list(steps or [])
        self.api_key = api_key
        self.models = models
        self.models_html = models_html  # answer the model list with a web page, like a misconfigured base URL
        self.requests: list[Recorded] = []
        self._server: asyncio.base_events.Server | None = None
        self._connections = 0
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> "FakeLLMServer":
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def add(self, *steps: Step) -> None:
        self.steps.extend(steps)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        connection = self._connections
        try:
            while True:
                if not await self._one_request(reader, writer, connection):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _one_request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: int) -> bool:
        line = await reader.readline()
        if not line:
            return False
        method, path, _ = line.decode().split(" ", 2)
        headers: dict[str, str] = {}
        while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
            key, _, value = h.decode().partition(":")
            headers[key.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        body = json.loads(raw) if raw else None
        self.requests.append(Recorded(method, path, headers, body, connection))
        given = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if given != self.api_key:
            await self._send_json(writer, 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
            return True
        if method == "GET" and "/models" in path:
            if self.models_html:
                page = b"<html><body>Welcome to my chat UI</body></html>"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(page), page))
                await writer.drain()
                return True
            await self._models(writer, path.split("?")[0].rstrip("/"))
            return True
        step = self.steps.pop(0) if self.steps else Step(status=500, error={"message": "the fake server has no step left"})
        if step.delay:
            await asyncio.sleep(step.delay)
        openai = path.rstrip("/").endswith("/chat/completions")
        if step.status != 200:
            err = step.error or {"message": f"status {step.status}"}
            payload = {"error": err} if openai else {"type": "error", "error": {"type": err.get("type", "api_error"), **err}}
            await self._send_json(writer, step.status, payload, step.headers)
            return True
        stream = bool(body and body.get("stream"))
        if not stream:
            payload = self._openai_json(step, body) if openai else self._anthropic_json(step, body)
            await self._send_json(writer, 200, payload, step.headers)
            return True
        events = self._openai_events(step, body) if openai else self._anthropic_events(step, body)
        head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
        head += "Transfer-Encoding: chunked\r\n" if step.keep_alive else "Connection: close\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in step.headers.items()) + "\r\n"
        writer.write(head.encode())
        sent_text = 0
        if step.midstream_error is not None or step.inject:
            first_text = next(i for i, (_, is_text) in enumerate(events) if is_text)
            rest = events[first_text + 1:]
            if step.midstream_error is not None:
                err = step.midstream_error
                rest = [(f"event: error\ndata: {json.dumps({'type': 'error', 'error': err})}\n\n" if not openai
                         else f"data: {json.dumps({'error': err})}\n\n", False)]
            events = events[: first_text + 1] + [(e, False) for e in step.inject] + rest
        for event, is_text in events:
            if is_text and step.cut_after is not None and sent_text >= step.cut_after:
                await writer.drain()
                writer.transport.abort()  # the connection dies mid-stream
                return False
            if is_text and step.gate is not None and sent_text == step.gate_after:
                while not step.gate.is_set():  # (a thread's event: the test sets it from another loop)
                    await asyncio.sleep(0.01)
            data = event.encode()
            writer.write(b"%x\r\n%s\r\n" % (len(data), data) if step.keep_alive else data)
            await writer.drain()
            sent_text += is_text
            await asyncio.sleep(0)
        if step.keep_alive:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return step.keep_alive  # otherwise Connection: close after a stream

    async def _models(self, writer: asyncio.StreamWriter, path: str) -> None:
        def card(mid: str) -> dict[str, Any]:
            return {"id": mid, "type": "model", "object": "model", "display_name": mid,
                    "created_at": "2025-01-01T00:00:00Z", "created": 0, "owned_by": "test"}

        if path.endswith("/models"):
            await self._send_json(writer, 200, {"data": [card(m) for m in self.models], "has_more": False,
                                                "first_id": self.models[0], "last_id": self.models[-1], "object": "list"})
            return
        wanted = path.rsplit("/", 1)[1]
        if wanted in self.models:
            await self._send_json(writer, 200, card(wanted))
        else:
            await self._send_json(writer, 404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {wanted}"}})

    async def _send_json(self, writer: asyncio.StreamWriter, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
                  500: "Internal Server Error", 529: "Overloaded"}.get(status, "Error")
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in (extra or {}).items()) + "\r\n"
        writer.write(head.encode() + data)
        await writer.drain()

    @staticmethod
    def _chunks(step: Step) -> list[str]:
        return [step.text[i:i + step.chunk] for i in range(0, len(step.text), step.chunk)]

    # --- Anthropic Messages API ------------------------------------------------------------------------------------

    def _anthropic_json(self, step: Step, body: Any) -> dict[str, Any]:
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "claude-test"),
                "content": [{"type": "text", "text": step.text}], "stop_reason": step.stop_reason,
                "stop_sequence": step.stop_sequence,
                "usage": {"input_tokens": step.usage[0], "output_tokens": step.usage[1],
                          "cache_read_input_tokens": step.cache_read, "cache_creation_input_tokens": 0}}

    def _anthropic_events(self, step: Step, body: Any) -> list[tuple[str, bool]]:
        def ev(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        start = {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "claude-test"), "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": step.usage[0], "output_tokens": 1, "cache_read_input_tokens": step.cache_read,
                      "cache_creation_input_tokens": step.cache_write}}}
        # A forced tool (tool_choice names one) is answered as the API does: a tool_use block whose input streams
        # as partial JSON, and stop_reason "tool_use".
        forced = (body.get("tool_choice") or {}).get("name")
        block = {"type": "tool_use", "id": "toolu_1", "name": forced, "input": {}} if forced else {"type": "text", "text": ""}
        out = [(ev("message_start", start), False),
               (ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}), False),
               (ev("ping", {"type": "ping"}), False)]
        for c in self._chunks(step):
            delta = {"type": "input_json_delta", "partial_json": c} if forced else {"type": "text_delta", "text": c}
            out.append((ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}), True))
        out.append((ev("content_block_stop", {"type": "content_block_stop", "index": 0}), False))
        stop_reason = "tool_use" if forced else step.stop_reason
        out.append((ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason,
                                                                             "stop_sequence": step.stop_sequence},
                                         "usage": {"output_tokens": step.usage[1]}}), False))
        out.append((ev("message_stop", {"type": "message_stop"}), False))
        return out

    # --- OpenAI Chat Completions API -------------------------------------------------------------------------------

    @staticmethod
    def _finish(step: Step) -> str:
        return {"max_tokens": "length"}.get(step.stop_reason, "stop")

    def _openai_json(self, step: Step, body: Any) -> dict[str, Any]:
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model", "gpt-test"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": step.text}, "finish_reason": self._finish(step)}],
                "usage": {"prompt_tokens": step.usage[0], "completion_tokens": step.usage[1], "total_tokens": sum(step.usage)}}

    def _openai_events(self, step: Step, body: Any) -> list[tuple[str, bool]]:
        def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, Any] | None = None, choices: bool = True) -> str:
            data: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                                    "model": body.get("model", "gpt-test"),
                                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else []}
            if usage is not None:
                data["usage"] = usage
            return f"data: {json.dumps(data)}\n\n"

        out = [(chunk({"role": "assistant", "content": ""}), False)]
        out += [(chunk({"content": c}), True) for c in self._chunks(step)]
        out.append((chunk({}, self._finish(step)), False))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": step.usage[0], "completion_tokens": step.usage[1], "total_tokens": sum(step.usage),
                     "prompt_tokens_details": {"cached_tokens": step.cache_read}}
            out.append((chunk({}, usage=usage, choices=False), False))
        out.append(("data: [DONE]\n\n", False))
        return out


@contextmanager
def in_thread(server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """Run the server on its own event loop in a thread, for code under test that runs its own asyncio.run()."""
    ready, stop = threading.Event(), threading.Event()

    async def run() -> None:
        async with server:
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.02)

    thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    thread.start()
    if not ready.wait(5):
        raise RuntimeError("the fake LLM server did not start")
    try:
        yield server
    finally:
        stop.set()
        thread.join(5)


def agents_config(directory, model: str = "gpt-test"):
    """A config file in which every agent uses `model` (a name the fake server lists); returns its path."""
    path = directory / "agents.toml"
    path.write_text("\n".join(f'[agents.{a}]\nmodel = "{model}"' for a in ("narrative", "combat", "npc", "summarizer")))
    return path
