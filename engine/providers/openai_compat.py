"""Any OpenAI-compatible Chat Completions server (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter) through the SDK."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

import openai

from .. import jsonio
from ..errors import ModelError, ProviderConfigError
from ..models import Completion, ModelRequest, StreamItem, Usage
from .faults import connection_error, retry_after_seconds, status_error, stream_error
from .http import StreamingPost
from .sse import events

DEFAULT_MODEL = "gpt-6-luna"
MAX_STOP = 4  # OpenAI's limit


class OpenAICompatModel:
    """No prefill: continuations go as follow-up messages. Tags are caught by reading the stream, not by stops."""

    provider = "openai"
    supports_prefill = False

    def __init__(self, client: openai.AsyncOpenAI, default_model: str | None = DEFAULT_MODEL, *, official: bool = True) -> None:
        self.client = client
        self.posts = StreamingPost(client, openai)
        self.default_model = default_model or ""
        self.official = official

    async def aclose(self) -> None:
        """Close the connections, the SDK's and the streams' (on the loop that opened them)."""
        try:
            await self.posts.aclose()
        finally:
            await self.client.close()

    def _error(self, exc: Exception, model: str) -> ModelError:
        base = str(self.client.base_url).rstrip("/")
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code == 404 and not self.official and not base.endswith("/v1") and model not in _detail(exc):
                # Not an unknown model: the API is not there. Servers (Ollama, vLLM, llama.cpp) serve it under /v1.
                return ProviderConfigError(
                    f"The server at {base} has no OpenAI-compatible API there (HTTP 404 for {base}/chat/completions). "
                    f"Such servers answer under /v1: try OPENAI_BASE_URL={base}/v1")
            return status_error("The OpenAI-compatible server", exc.status_code, _detail(exc), model=model,
                                key_setting="OPENAI_API_KEY and OPENAI_BASE_URL",
                                retry_after=retry_after_seconds(exc.response.headers))
        return connection_error(f"The OpenAI-compatible server at {base}", exc)

    def body(self, request: ModelRequest) -> dict[str, Any]:
        messages = [{"role": "system", "content": request.system_text()}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        body: dict[str, Any] = {"model": request.model or self.default_model, "messages": messages,
                                "temperature": request.temperature, "stream": True,
                                "stream_options": {"include_usage": True}}
        # OpenAI itself wants max_completion_tokens; other servers still read max_tokens.
        body["max_completion_tokens" if self.official else "max_tokens"] = request.max_tokens
        # A closing-tag stop would be cut from the text without saying which one matched, so only
        # stops that end the reply are sent; tool tags are caught by reading the stream.
        stops = [s for s in request.stop if not s.startswith("</")][:MAX_STOP]
        if stops:
            body["stop"] = stops
        if request.seed is not None:
            body["seed"] = request.seed
        if request.schema is not None:  # OpenAI, vLLM, llama.cpp's server and Ollama hold the reply to it
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": "reply", "schema": request.schema, "strict": False}}
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The reply as it streams. The SDK sends the request (auth, base URL, retries of refused connections,
        status errors); the stream itself is read raw, one JSON decode per event: the SDK's request transform
        and per-chunk model objects cost ~15 ms of CPU per request, more than a whole turn of the engine."""
        body = self.body(request)
        try:
            response = await self.posts.post("/chat/completions", body)
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            raise self._error(exc, body["model"]) from exc
        usage, finish = Usage(), None
        try:
            done = False
            async for _, data in events(response.content.iter_any()):
                # After [DONE] the stream is read to its end (the chunked ending), so the connection goes back
                # to the pool for the next request instead of being closed.
                if done or data.startswith("[DONE]"):
                    done = True
                    continue
                chunk = jsonio.loads(data)
                if not isinstance(chunk, dict):
                    continue
                if chunk.get("error"):  # an error object inside the stream
                    err = chunk["error"] if isinstance(chunk["error"], dict) else {"message": str(chunk["error"])}
                    raise stream_error("The OpenAI-compatible server", (err.get("type"), err.get("code")),
                                       err.get("message") or "an error in the stream", model=body["model"],
                                       key_setting="OPENAI_API_KEY")
                if chunk.get("usage"):
                    got = chunk["usage"]
                    usage.input_tokens = got.get("prompt_tokens") or 0
                    usage.output_tokens = got.get("completion_tokens") or 0
                    usage.cache_read_tokens = (got.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
                for choice in chunk.get("choices") or ():
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        yield text
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
        except ModelError:
            raise
        except json.JSONDecodeError as exc:
            raise ModelError(f"The OpenAI-compatible server sent a stream event that is not JSON ({exc.msg})",
                             retryable=True) from exc
        except Exception as exc:  # the transport failed mid-stream
            raise connection_error("The OpenAI-compatible server", exc) from exc
        finally:
            response.release()
        if finish is None:
            raise ModelError("The OpenAI-compatible server's stream ended before the reply was finished", retryable=True)
        yield Completion("max_tokens" if finish == "length" else "end", None, usage if usage.input_tokens else None)

    async def check(self, model: str) -> None:
        """Fail fast on a bad key, and on an unknown model when the server lists its models."""
        model = model or self.default_model
        if not model:
            raise ModelError("No model is set for the OpenAI-compatible server: set LOREKEEPER_MODEL in .env (e.g. "
                             "LOREKEEPER_MODEL=llama3.1 for Ollama), or `model` per agent in your config file.")
        try:
            listed = [m.id async for m in self.client.models.list()]
        except openai.NotFoundError:
            return  # some servers have no model list; the first turn will tell
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            raise self._error(exc, model) from exc
        except Exception as exc:  # not the API at all, e.g. a web page
            raise ModelError(f"The server at OPENAI_BASE_URL did not answer like an OpenAI-compatible API ({type(exc).__name__}). "
                             "Does the URL end in /v1?") from exc
        names = set(listed) | {m.removesuffix(":latest") for m in listed}
        if listed and model not in names:
            raise status_error("The OpenAI-compatible server", 404, f"it serves {', '.join(listed[:10])}", model=model,
                               key_setting="OPENAI_API_KEY")


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    err = body.get("error") if isinstance(body.get("error"), dict) else body
    return str((err or {}).get("message") or exc.message)
