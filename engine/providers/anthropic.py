"""Anthropic's Messages API through the official SDK: streaming, stop sequences, prefill, prompt caching."""

from __future__ import annotations

from typing import Any, AsyncIterator

import anthropic

from ..errors import ModelError, ProviderConfigError
from ..models import Completion, ModelRequest, StreamItem, Usage
from .faults import connection_error, retry_after_seconds, status_error, stream_error

DEFAULT_MODEL = "claude-sonnet-5-5"
_STOP = {"end_turn": "end", "stop_sequence": "stop_sequence", "max_tokens": "max_tokens"}


class AnthropicModel:
    provider = "anthropic"
    supports_prefill = True

    def __init__(self, client: anthropic.AsyncAnthropic, default_model: str = DEFAULT_MODEL) -> None:
        self.client = client
        self.default_model = default_model

    async def aclose(self) -> None:
        """Close the SDK's connections (on the loop that opened them)."""
        await self.client.close()

    def _error(self, exc: Exception, model: str) -> ModelError:
        if isinstance(exc, anthropic.APIStatusError) and exc.status_code < 400:  # an error event inside the stream
            body = exc.body if isinstance(exc.body, dict) else {}
            err = body.get("error") if isinstance(body.get("error"), dict) else body
            return stream_error("Anthropic", ((err or {}).get("type"), getattr(exc, "type", None)), _detail(exc),
                                model=model, key_setting="ANTHROPIC_API_KEY")
        if isinstance(exc, anthropic.APIStatusError):
            return status_error("Anthropic", exc.status_code, _detail(exc), model=model, key_setting="ANTHROPIC_API_KEY",
                                retry_after=retry_after_seconds(exc.response.headers))
        return connection_error("Anthropic", exc)

    def body(self, request: ModelRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [{"role": m.role, "content": m.content} for m in request.messages]
        if request.prefill:
            # The API refuses a final assistant turn that ends in whitespace.
            messages.append({"role": "assistant", "content": request.prefill.rstrip()})
        # The stable part is marked for caching; the per-turn state follows it, uncached.
        system: list[dict[str, Any]] = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
        if request.context:
            system.append({"type": "text", "text": request.context})
        # No temperature: the Messages API version of anthropic>=2 takes no sampling parameters.
        body: dict[str, Any] = {"model": request.model or self.default_model, "max_tokens": request.max_tokens,
                                "system": system, "messages": messages}
        if request.stop:
            body["stop_sequences"] = request.stop
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        body = self.body(request)
        try:
            stream = await self.client.messages.create(**body, stream=True)
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            raise self._error(exc, body["model"]) from exc
        usage, completion = Usage(), None
        try:
            async for event in stream:
                if event.type == "content_block_delta" and getattr(event.delta, "type", "") == "text_delta":
                    yield event.delta.text
                elif event.type == "message_start":
                    u = event.message.usage
                    usage.input_tokens = u.input_tokens
                    usage.cache_read_tokens = u.cache_read_input_tokens or 0
                    usage.cache_write_tokens = u.cache_creation_input_tokens or 0
                    yield Usage(usage.input_tokens, 0, usage.cache_read_tokens, usage.cache_write_tokens)
                elif event.type == "message_delta":
                    usage.output_tokens = event.usage.output_tokens
                    completion = Completion(_STOP.get(event.delta.stop_reason or "", "end"), event.delta.stop_sequence, usage)
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            raise self._error(exc, body["model"]) from exc
        except Exception as exc:  # the transport failed mid-stream
            raise connection_error("Anthropic", exc) from exc
        finally:
            await stream.close()
        if completion is None:
            raise ModelError("Anthropic's stream ended before the reply was finished", retryable=True)
        yield completion

    async def check(self, model: str) -> None:
        """Fail fast on a bad key or an unknown model, before anyone plays."""
        try:
            info = await self.client.models.retrieve(model or self.default_model)
        except (anthropic.APIStatusError, anthropic.APIConnectionError) as exc:
            raise self._error(exc, model or self.default_model) from exc
        if str(getattr(info, "lifecycle", "") or "").lower() == "retired":
            raise ProviderConfigError(f"Anthropic has retired the model '{model or self.default_model}'. "
                                      "Set another model for this agent in your config file (LOREKEEPER_CONFIG).")


def _detail(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    err = body.get("error") if isinstance(body.get("error"), dict) else body
    return str(err.get("message") or exc.message)
