"""Server-sent events read straight off a streamed HTTP response's bytes: one JSON decode per event instead of
the SDKs' model object per chunk (which cost more CPU per request than the engine's whole turn), and lines split
here rather than by httpx's text and line decoders (another ~0.7 ms a turn at 200 busy channels)."""

from __future__ import annotations

from typing import AsyncIterator


async def events(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[str | None, str]]:
    """(event name or None, data) for each event in an SSE stream (the WHATWG format: lines end in LF, CRLF or CR;
    ids and retry hints are not used by the model APIs, so they are skipped)."""
    name: str | None = None
    data: list[str] = []
    pending: list[bytes] = []  # the unfinished line's pieces, joined once its end arrives: linear in the stream
    ended = False
    while not ended:
        try:
            chunk = await anext(chunks)
        except StopAsyncIteration:
            chunk, ended = b"", True
        if not ended and b"\n" not in chunk and b"\r" not in chunk:
            pending.append(chunk)
            continue
        text = b"".join(pending) + chunk
        # A CR at the end of a chunk may be half of a CRLF: it waits for the next chunk (or the end).
        held = not ended and text.endswith(b"\r")
        if held:
            text = text[:-1]
        lines = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        pending = [] if ended else [lines.pop() + (b"\r" if held else b"")]
        for raw in lines:
            if not raw:
                if data:
                    yield name, "\n".join(data)
                name, data = None, []
                continue
            line = raw.decode("utf-8", "replace")  # whole lines only: a character is never split
            if line.startswith(":"):  # a comment, e.g. a keep-alive
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field == "event":
                name = value
    if data:  # a stream that ended without the last blank line
        yield name, "\n".join(data)
