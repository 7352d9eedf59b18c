"""An HTTP client for the SDKs whose requests are spread over several connection pools.

httpcore scans its whole pool when a request starts and when a response ends, asking every idle connection's
socket whether it is readable: with 200 channels streaming at once that scan cost ~1.8 ms of CPU per request,
more than the rest of a turn. Eight pools, taken in turn, each hold an eighth of the connections, so each scan
does an eighth of the work. Connections are still kept alive and reused within each pool."""

from __future__ import annotations

import itertools
import os
import socket
from typing import Any

import httpx2

POOLS = 8
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


class SpreadTransport(httpx2.AsyncBaseTransport):
    def __init__(self, pools: int = POOLS, limits: httpx2.Limits | None = None, **transport: Any) -> None:
        limits = limits or httpx2.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=5.0)
        share = httpx2.Limits(  # the SDKs' limits, shared out among the pools
            max_connections=max(1, (limits.max_connections or 1000) // pools),
            max_keepalive_connections=max(1, (limits.max_keepalive_connections or 100) // pools),
            keepalive_expiry=limits.keepalive_expiry)
        self.pools = [httpx2.AsyncHTTPTransport(limits=share, socket_options=_keepalive(), **transport)
                      for _ in range(pools)]
        self._turn = itertools.cycle(self.pools)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await next(self._turn).handle_async_request(request)

    async def aclose(self) -> None:
        for pool in self.pools:
            await pool.aclose()


def http_client(sdk_client: type, **kwargs: Any) -> Any:
    """The SDK's own default client class (its timeouts, limits, redirects), over spread pools; None when the
    environment names a proxy (a transport given to httpx turns its proxy settings off): then the SDK's default."""
    if any(os.environ.get(name) or os.environ.get(name.lower()) for name in PROXY_VARIABLES):
        return None
    return sdk_client(transport=SpreadTransport(), **kwargs)


def _keepalive() -> list[tuple[int, int, int]]:
    """TCP keepalive, as the Anthropic SDK sets it: a long stream behind a NAT is not silently dropped."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5)):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    return options
