"""Server-sent events read straight off a streamed HTTP response: one `json.loads` per event instead of the
SDKs' model object per chunk (which cost more CPU per request than the engine's whole turn)."""

from __future__ import annotations

from typing import AsyncIterator


async def events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str | None, str]]:
    """(event name or None, data) for each event in an SSE stream's lines (the WHATWG format; ids and retry
    hints are not used by the model APIs, so they are skipped)."""
    name: str | None = None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = None, []
            continue
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
