"""The HTTP client the SDKs send through: their own aiohttp transport (`DefaultAioHttpClient`), not httpx's
default one.

Measured at 200 channels streaming at once (bench/channels.py): httpcore, h11 and anyio cost more CPU per
streamed request than the engine's whole turn (the engine process spent ~24 s of CPU on 1,000 turns); over
aiohttp, whose HTTP parser is compiled, the same run took ~17-19 s. The SDKs still build every request (auth,
base URL, headers, timeouts, status errors), and the client still takes its proxy from the environment."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import structlog

log = structlog.get_logger(__name__)


def http_client(sdk: ModuleType) -> Any:
    """The SDK's aiohttp-backed client with the SDK's defaults (timeouts, connection limits, redirects); None (the
    SDK's default httpx client) if this SDK build has no aiohttp transport."""
    try:
        return sdk.DefaultAioHttpClient()
    except (AttributeError, RuntimeError) as exc:  # an SDK without the transport, or aiohttp missing
        log.warning("aiohttp_transport_unavailable", sdk=sdk.__name__, error=str(exc))
        return None
