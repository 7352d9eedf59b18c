"""Turning a provider's HTTP failures into ModelErrors: retryable, fatal, or a configuration mistake."""

from __future__ import annotations

from ..errors import ModelError, ProviderConfigError

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
RETRYABLE_TYPES = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error", "server_error",
                   "rate_limit_exceeded", "internal_error", "service_unavailable"}
CONFIG_TYPES = {"authentication_error", "permission_error", "invalid_api_key", "not_found_error", "model_not_found"}


def stream_error(provider: str, kinds: tuple[object, ...], detail: str, *, model: str, key_setting: str) -> ModelError:
    """An error reported inside a stream (HTTP 200), judged by every identifier it carries (type, code).

    OpenAI's rate limits, for one, say type "requests" and code "rate_limit_exceeded": any identifier may decide.
    """
    names = [str(k).lower() for k in kinds if k not in (None, "")]
    label = "/".join(names) or "error"
    config = next((n for n in names if n in CONFIG_TYPES), None)
    if config is not None:
        return status_error(provider, 404 if "found" in config else 401, detail, model=model, key_setting=key_setting)
    if any(n in RETRYABLE_TYPES or (n.isdigit() and (int(n) == 429 or int(n) >= 500)) for n in names):
        return ModelError(f"{provider} failed mid-reply ({label}: {detail[:200]})", retryable=True)
    return ModelError(f"{provider} refused the request mid-reply ({label}: {detail[:200]})")


def status_error(provider: str, status: int, detail: str, *, model: str, key_setting: str,
                 retry_after: float | None = None) -> ModelError:
    detail = " ".join(detail.split())[:300]
    if status in (401, 403):
        return ProviderConfigError(f"{provider} refused the API key (HTTP {status}: {detail}). "
                                   f"Check {key_setting} in your .env (see .env.example).")
    if status == 404:
        return ProviderConfigError(f"{provider} does not know the model '{model}' (HTTP 404: {detail}). "
                                   "Set another model for this agent in your config file (LOREKEEPER_CONFIG).")
    if status in RETRYABLE_STATUS or status >= 500:
        return ModelError(f"{provider} is unavailable for now (HTTP {status}: {detail})", retryable=True, retry_after=retry_after)
    return ModelError(f"{provider} refused the request (HTTP {status}: {detail})")


def retry_after_seconds(headers: object) -> float | None:
    """Seconds to wait from Retry-After / retry-after-ms headers, bounded so a turn never waits minutes."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = get(name)
        if value:
            try:
                return min(60.0, max(0.0, float(value) * scale))
            except ValueError:
                continue
    return None


def connection_error(provider: str, exc: BaseException) -> ModelError:
    kind = "timed out" if "timeout" in type(exc).__name__.lower() else "could not be reached"
    return ModelError(f"{provider} {kind} ({type(exc).__name__}: {exc})", retryable=True)
