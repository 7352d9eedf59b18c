"""A loopback model server for benchmarks: OpenAI Chat Completions and Anthropic Messages, streamed as SSE over
HTTP/1.1 keep-alive (chunked), answering every request after a fixed latency, as a remote API would.

The first generation of a turn writes one roll tag; a continuation (the last message carries an observation)
finishes the reply in prose. Stop sequences end a reply as the real APIs end it (the stream finishes normally,
the stop left out, Anthropic naming the one that matched), so a connection is reused when the engine sends them.
Run it as its own process, so its work is not the engine's:

    python bench/llm_server.py --port 0 --latency 1.0    (prints "port N" when it listens)
"""

from __future__ import annotations

import argparse
import asyncio
import json

FIRST = "You lunge across the wet planks and reach for the swinging rope. <roll>1d20+2</roll> never sent"
AFTER = " Your fingers close on it just in time, and the boat swings back against the quay with a thud."
CHUNK = 6  # characters per streamed delta: a token or two, as providers send them


class Server:
    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self.one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if method == "GET":
            data = json.dumps({"data": [{"id": "bench-model", "object": "model", "type": "model"}],
                               "object": "list", "has_more": False}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(data), data))
            await writer.drain()
            return True
        self.requests += 1
        request = json.loads(body)
        last = request["messages"][-1]
        content = last["content"] if isinstance(last["content"], str) else json.dumps(last["content"])
        text = AFTER if "<observation" in content else FIRST
        openai = path.rstrip("/").endswith("/chat/completions")
        stops = request.get("stop" if openai else "stop_sequences") or []
        stops = [stops] if isinstance(stops, str) else stops
        cut = min(((text.find(s), s) for s in stops if s in text), default=None)
        if cut is not None:
            text = text[:cut[0]]
        await asyncio.sleep(self.latency)
        events = openai_events(text) if openai else anthropic_events(text, cut[1] if cut else None)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        for event in events:
            data = event.encode()
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


def openai_events(text: str) -> list[str]:
    def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> str:
        data: dict = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 0, "model": "bench-model",
                      "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage:
            data["usage"] = usage
        return f"data: {json.dumps(data)}\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": text[i:i + CHUNK]}) for i in range(0, len(text), CHUNK)]
    out.append(chunk({}, "stop"))
    out.append(chunk({}, usage={"prompt_tokens": 1500, "completion_tokens": 30, "total_tokens": 1530,
                                "prompt_tokens_details": {"cached_tokens": 1200}}))
    out.append("data: [DONE]\n\n")
    return out


def anthropic_events(text: str, stopped_by: str | None = None) -> list[str]:
    def ev(name: str, data: dict) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    usage = {"input_tokens": 1500, "output_tokens": 1, "cache_read_input_tokens": 1200, "cache_creation_input_tokens": 0}
    out = [ev("message_start", {"type": "message_start", "message": {
               "id": "msg_b", "type": "message", "role": "assistant", "model": "bench-model", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": usage}}),
           ev("content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}})]
    out += [ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": text[i:i + CHUNK]}})
            for i in range(0, len(text), CHUNK)]
    out += [ev("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ev("message_delta", {"type": "message_delta", "delta": {
                "stop_reason": "stop_sequence" if stopped_by else "end_turn", "stop_sequence": stopped_by},
                                 "usage": {"output_tokens": 30}}),
            ev("message_stop", {"type": "message_stop"})]
    return out


async def serve(port: int, latency: float) -> None:
    server = Server(latency)
    listening = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=1024)
    print(f"port {listening.sockets[0].getsockname()[1]}", flush=True)
    async with listening:
        await listening.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.port, args.latency))
    except KeyboardInterrupt:
        pass
