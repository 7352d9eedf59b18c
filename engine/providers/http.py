"""The HTTP client the SDKs send through: their own aiohttp transport (`DefaultAioHttpClient`), not httpx's
default one.

Measured at 200 channels streaming at once (bench/channels.py): httpcore, h11 and anyio cost more CPU per
streamed request than the engine's whole turn (the engine process spent ~24 s of CPU on 1,000 turns); over
aiohttp, whose HTTP parser is compiled, the same run took ~17-19 s. The SDKs still build every request (auth,
base URL, headers, timeouts, status errors), and the client still takes its proxy from the environment."""

from __future__ import annotations

import asyncio
import functools
import ssl
import urllib.request
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httpx2
import structlog

from .. import fair, jsonio

log = structlog.get_logger(__name__)


@functools.cache
def certificates() -> ssl.SSLContext:
    """The certificates every connection is checked against, as httpx finds them (certifi, or SSL_CERT_FILE/DIR):
    loaded once per process, when the first model is built. Loading them takes 60-140 ms of CPU here; done in a
    turn, it held up the first turn of every channel playing at the time (bench/channels.py)."""
    return httpx2.create_ssl_context(trust_env=True)


def http_client(sdk: ModuleType) -> Any:
    """The SDK's aiohttp-backed client with the SDK's defaults (timeouts, connection limits, redirects); None (the
    SDK's default httpx client) if this SDK build has no aiohttp transport."""
    try:
        return sdk.DefaultAioHttpClient()
    except (AttributeError, RuntimeError) as exc:  # an SDK without the transport, or aiohttp missing
        log.warning("aiohttp_transport_unavailable", sdk=sdk.__name__, error=str(exc))
        return None


class StreamingPost:
    """The one request a turn makes many of, a POST whose answer streams, sent without the SDK's per-request
    machinery but with the SDK's own parts: its base URL, its headers (auth, API version, user agent, custom
    headers), its timeout, its status errors (the same exception classes, built by the SDK from the response)
    and its connection errors. Measured at 200 busy channels: building a request through the SDK and httpx cost
    ~1.3 ms of CPU, about a quarter of a turn's (bench/channels.py). One aiohttp session per client, its
    connections kept alive between requests; the proxy the environment names, as the SDKs take it."""

    def __init__(self, client: Any, sdk: ModuleType) -> None:
        self.client, self.sdk = client, sdk
        self._session: aiohttp.ClientSession | None = None
        self._proxies: dict[str, str | None] = {}
        self._made: dict[str, tuple[str, dict[str, str], aiohttp.ClientTimeout, str | None]] = {}
        certificates()  # now, not in the first turn

    def _url(self, path: str) -> str:
        return str(self.client.base_url).rstrip("/") + "/" + path.lstrip("/")

    def _timeout(self) -> aiohttp.ClientTimeout:
        given = self.client.timeout
        if isinstance(given, httpx2.Timeout):
            return aiohttp.ClientTimeout(total=None, connect=given.pool, sock_connect=given.connect, sock_read=given.read)
        seconds = float(given) if isinstance(given, (int, float)) else None
        return aiohttp.ClientTimeout(total=None, connect=seconds, sock_connect=seconds, sock_read=seconds)

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # The SDKs' connection limit; certificates as httpx finds them (certifi, or SSL_CERT_FILE/DIR).
            connector = aiohttp.TCPConnector(limit=1000, keepalive_timeout=5.0, ssl=certificates())
            self._session = aiohttp.ClientSession(connector=connector)  # gzip answers are unpacked, as httpx does
        return self._session

    async def post(self, path: str, body: dict[str, Any]) -> aiohttp.ClientResponse:
        """The response, its body unread (the caller reads it and then releases it); the SDK's APIStatusError
        for an answer of 400 or more, APITimeoutError or APIConnectionError when the server cannot be reached."""
        url, headers, timeout, proxy = self._parts(path)
        try:
            response = await self.session().post(url, data=jsonio.dumpb(body), headers=headers,
                                                  timeout=timeout, proxy=proxy,
                                                  allow_redirects=True)  # as the SDKs follow them
        except (asyncio.TimeoutError, aiohttp.ServerTimeoutError) as exc:
            raise self.sdk.APITimeoutError(request=httpx2.Request("POST", url)) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise self.sdk.APIConnectionError(message=f"Connection error: {exc}",
                                              request=httpx2.Request("POST", url)) from exc
        try:
            await fair.step()  # the answer arrived: take the loop in turn with the other channels' (engine/fair.py)
        except BaseException:
            response.release()
            raise
        if response.status >= 400:
            request = httpx2.Request("POST", url)  # what the SDK's errors name
            try:
                content = await response.read()
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                raise self.sdk.APIConnectionError(message=f"Connection error: {exc}", request=request) from exc
            finally:
                response.release()
            # The body is already unpacked: its encoding and length headers no longer describe it.
            headers = [(k, v) for k, v in response.raw_headers if k.lower() not in (b"content-encoding", b"content-length")]
            raise self.client._make_status_error_from_response(
                httpx2.Response(response.status, headers=headers, content=content, request=request))
        return response

    def _parts(self, path: str) -> tuple[str, dict[str, str], aiohttp.ClientTimeout, str | None]:
        """The URL, headers, timeout and proxy of a request to `path`, worked out once: the client's settings do not
        change after it is made (another key or base URL is another client), and asking the SDK for its headers
        each time cost ~0.1 ms a request."""
        found = self._made.get(path)
        if found is None:
            url = self._url(path)
            # The key's header, then the client's (user agent, API version, headers the admin set): as the SDK
            # merges them; a header the SDK leaves out (Omit) is not sent.
            merged = {**self.client.auth_headers, **self.client.default_headers}
            headers = {k: v for k, v in merged.items() if isinstance(v, str)}
            found = self._made[path] = (url, headers, self._timeout(), self._proxy(url))
        url, headers, timeout, proxy = found
        return url, dict(headers), timeout, proxy  # aiohttp may add to the headers it is given

    def _proxy(self, url: str) -> str | None:
        """The proxy the environment names for `url` (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, minus NO_PROXY), read
        once per URL: aiohttp's own lookup (trust_env) reads the whole environment at every request."""
        if url not in self._proxies:
            parts = urlsplit(url)
            proxies = urllib.request.getproxies_environment()
            bypass = "no" in proxies and urllib.request.proxy_bypass_environment(parts.hostname or "", proxies)
            proxy = None if bypass else (proxies.get(parts.scheme) or proxies.get("all"))
            # "host:3128" is an HTTP proxy, as httpx (and so the SDK) reads it.
            self._proxies[url] = proxy if not proxy or "://" in proxy else f"http://{proxy}"
        return self._proxies[url]

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
