"""The built-in model client: chat completions from any OpenAI-compatible endpoint, with retries.

The SDK's own retrying is off; this client retries 429s, 5xx answers, timeouts, dropped connections and
malformed replies with exponential backoff (or the endpoint's `Retry-After`), and turns everything retrying
cannot fix into a `ModelError` whose message says which setting to change.
"""

from __future__ import annotations

import email.utils
import os
import random
import re
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Literal, cast

import anyio
import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from adaexplore.agent._messages import Message, Reply, Usage
from adaexplore.config import ModelConfig
from adaexplore.errors import ModelError
from adaexplore.listing import first_of

__all__ = ["Message", "ModelClient", "Reply", "RetryHook", "Usage"]

# Sent when a custom endpoint needs no key (vLLM, llama.cpp, Ollama accept anything).
_PLACEHOLDER_KEY = "EMPTY"
# The most seconds `check()` waits for one answer.
_CHECK_TIMEOUT_S = 30.0
# Tries of the check's chat request, and the answers that earn another try (busy, not wrong).
_CHECK_ATTEMPTS = 3
_CHECK_AGAIN = frozenset({408, 429, 502, 503, 504})

RetryHook = Callable[[str, int, str, float], None]
"""Called before each retry with (purpose, number of the attempt that failed, reason, delay in seconds)."""


_Kind = Literal["rate_limited", "server", "timeout", "connection", "malformed"]


class _Retryable(Exception):
    """One attempt failed in a way another attempt may not."""

    def __init__(self, kind: _Kind, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.kind: _Kind = kind
        self.reason = reason
        self.retry_after = retry_after


class ModelClient:
    """Sends chat requests to the configured endpoint; at most `config.concurrency` at once."""

    def __init__(self, config: ModelConfig, *, api_key: str | None = None, on_retry: RetryHook | None = None) -> None:
        name = config.resolved_name() if config.name is None else config.name
        if config.name is None:
            config = config.model_copy(update={"name": name})
        self._config = config
        self._name = name  # the model every request names
        self._on_retry = on_retry
        key = api_key or os.environ.get(config.api_key_env) or None
        self._key_found = key is not None
        if key is None and not (config.base_url or os.environ.get("OPENAI_BASE_URL")):
            raise ModelError(
                f"no API key for the OpenAI API: set the environment variable {config.api_key_env}, "
                f"or pass --api-key-env NAME to read the key from another variable"
            )
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=key or _PLACEHOLDER_KEY,
            max_retries=0,
            timeout=config.timeout_s,
        )
        self._url = str(self._client.base_url).rstrip("/")
        self._source = config.base_url_source()
        self._limiter = anyio.CapacityLimiter(config.concurrency)

    async def __aenter__(self) -> ModelClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def complete(self, messages: list[Message], *, purpose: str) -> Reply:
        """One reply to `messages`, retrying transient failures; `purpose` names the call in retry reports."""
        failures: list[_Retryable] = []
        while True:
            attempt = len(failures) + 1
            try:
                async with self._limiter:
                    start = time.monotonic()
                    completion = await self._request(messages)
                    reply = self._reply(completion, attempt, time.monotonic() - start)
                return reply
            except _Retryable as failure:
                failures.append(failure)
                if len(failures) > self._config.max_retries:
                    raise ModelError(self._exhausted(failures)) from None
                delay = self._delay(failure, attempt - 1)
                if self._on_retry is not None:
                    self._on_retry(purpose, attempt, failure.reason, delay)
                await anyio.sleep(delay)

    async def check(self) -> None:
        """Verify the address, key and model name with one cheap request; raise `ModelError` if one is wrong.

        The endpoint must answer as an OpenAI-compatible API: GET /models/{name} with the model, GET /models
        listing it, or else a one-token chat request answered with a chat completion. Any other answer (a web
        server's 404, a 501, a page that is not JSON) is refused before a run is made."""
        timeout = min(self._config.timeout_s, _CHECK_TIMEOUT_S)
        for attempt in (1, 2):
            try:
                with anyio.fail_after(timeout):
                    await self._client.models.retrieve(self._name, timeout=timeout)
                return
            except (openai.APIConnectionError, TimeoutError) as err:
                if attempt == 1:
                    await anyio.sleep(min(self._config.backoff_s, 1.0))
                    continue
                what = "did not answer in time" if _is_timeout(err) else "refused the connection"
                raise ModelError(
                    f"the model endpoint at {self._url} is unreachable ({what}); "
                    f"is the server running at {self._url}? check {self._source}"
                ) from None
            except openai.APIStatusError as err:
                if (refused := self._refusal(err)) is not None:
                    raise refused from None
                if err.status_code == 404:
                    await self._check_listed(timeout)
                else:  # a 429 or 5xx to a model route: only a chat completion shows the endpoint is one
                    await self._check_by_chat(timeout)
                return
            except (openai.APIResponseValidationError, ValueError):
                await self._check_by_chat(timeout)  # the route answers, but not as the OpenAI API does
                return

    # -- one attempt ---------------------------------------------------------------------------------

    async def _request(self, messages: list[Message]) -> object:
        config = self._config
        kwargs: dict[str, Any] = {
            "model": config.name,
            "messages": cast("list[ChatCompletionMessageParam]", messages),
            "max_completion_tokens": config.max_tokens,
            "timeout": config.timeout_s,
        }
        if config.temperature is not None:
            kwargs["temperature"] = config.temperature
        if config.reasoning_effort is not None:
            kwargs["reasoning_effort"] = config.reasoning_effort
        try:
            # The SDK's timeout bounds each read; this bounds the whole request.
            with anyio.fail_after(config.timeout_s):
                return await self._client.chat.completions.create(**kwargs)
        except (openai.APITimeoutError, TimeoutError):
            raise _Retryable("timeout", f"timed out after {config.timeout_s:g} s") from None
        except openai.APIConnectionError:
            raise _Retryable("connection", "connection failed") from None
        except openai.APIResponseValidationError:
            raise _Retryable("malformed", "malformed reply (not a chat completion)") from None
        except openai.APIStatusError as err:
            raise self._status_error(err) from None
        except ValueError:  # the SDK's json.loads of a body sent as JSON
            raise _Retryable("malformed", "malformed reply (invalid JSON)") from None

    def _status_error(self, err: openai.APIStatusError) -> _Retryable | ModelError:
        status = err.status_code
        message = _endpoint_message(err)
        if status == 429:
            return _Retryable("rate_limited", "429 rate limited", _retry_after(err))
        if status >= 500:
            return _Retryable("server", f"{status} from the endpoint", _retry_after(err) if status == 503 else None)
        if status == 408:
            return _Retryable("timeout", "408 request timeout from the endpoint")
        if (refused := self._refusal(err)) is not None:
            return refused
        sent = f"model '{self._name}', max_completion_tokens {self._config.max_tokens}"
        if status == 404:
            return ModelError(
                f"the endpoint at {self._url} answered 404 to POST /chat/completions ({message}; sent {sent}); "
                f"check {self._source} (OpenAI-compatible servers usually end in /v1) and --model"
            )
        return ModelError(f"the endpoint at {self._url} refused the request with {status}: {message} (sent {sent})")

    def _reply(self, completion: object, attempt: int, seconds: float) -> Reply:
        if not isinstance(completion, ChatCompletion):
            raise _Retryable("malformed", "malformed reply (not a chat completion)")
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise _Retryable("malformed", "malformed reply (no choices)")
        message = getattr(choices[0], "message", None)
        if message is None:
            raise _Retryable("malformed", "malformed reply (no message)")
        content = getattr(message, "content", None)
        finish_reason = getattr(choices[0], "finish_reason", None)
        usage = getattr(completion, "usage", None)
        input_tokens = _count(getattr(usage, "prompt_tokens", None))
        output_tokens = _count(getattr(usage, "completion_tokens", None))
        cost = (
            input_tokens * self._config.price_input_per_mtok + output_tokens * self._config.price_output_per_mtok
        ) / 1e6
        model = getattr(completion, "model", None)
        return Reply(
            text=content if isinstance(content, str) else "",
            finish_reason=finish_reason if isinstance(finish_reason, str) and finish_reason else "unknown",
            usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost),
            seconds=seconds,
            attempts=attempt,
            model=model if isinstance(model, str) and model else self._name,
        )

    # -- retries and messages ------------------------------------------------------------------------

    def _delay(self, failure: _Retryable, retry_index: int) -> float:
        config = self._config
        if failure.retry_after is not None:
            return min(config.backoff_max_s, failure.retry_after)
        return min(config.backoff_max_s, config.backoff_s * 2**retry_index) + random.uniform(0, config.backoff_s)

    def _exhausted(self, failures: list[_Retryable]) -> str:
        counts: dict[str, int] = {}
        for failure in failures:
            counts[failure.reason] = counts.get(failure.reason, 0) + 1
        what = ", ".join(reason if n == 1 else f"{reason} ×{n}" for reason, n in counts.items())
        advice = {
            "connection": f"is the server running at {self._url}? check {self._source}",
            "timeout": "raise --timeout if replies take longer, or check the server's load",
            "rate_limited": "lower --concurrency or wait",
            "server": "check the server's logs, or try again later",
            "malformed": f"check that {self._source} points at an OpenAI-compatible API (usually ending in /v1)",
        }
        kinds = dict.fromkeys(failure.kind for failure in reversed(failures))
        return f"no reply from the model endpoint at {self._url} after {len(failures)} attempts ({what}); " + "; ".join(
            advice[kind] for kind in kinds
        )

    def _refusal(self, err: openai.APIStatusError) -> ModelError | None:
        """The error for an answer that no retry can change: a refused key or an unknown model."""
        message = _endpoint_message(err)
        if err.status_code in (401, 403):
            return ModelError(self._key_refused(err.status_code, message))
        if _says_model_missing(err.status_code, err.code, message):
            return ModelError(self._unknown_model(message))
        return None

    def _key_refused(self, status: int, message: str) -> str:
        variable = self._config.api_key_env
        fix = f"set {variable} to a valid key, or pass --api-key-env NAME to read it from another variable"
        if self._key_found:
            return f"the endpoint at {self._url} refused the API key from {variable} ({status}: {message}); {fix}"
        return f"the endpoint at {self._url} wants an API key ({status}: {message}) and {variable} is not set; {fix}"

    def _unknown_model(self, message: str) -> str:
        return f"the endpoint at {self._url} does not know model '{self._name}' ({message}); check --model"

    async def _check_listed(self, timeout: float) -> None:
        """After a 404 on GET /models/{name}: look the name up in GET /models, if the endpoint has that route."""
        try:
            with anyio.fail_after(timeout):
                page = await self._client.models.list(timeout=timeout)
        except openai.APIStatusError as err:
            if err.status_code in (401, 403):
                raise ModelError(self._key_refused(err.status_code, _endpoint_message(err))) from None
            await self._check_by_chat(timeout)  # no /models route at all: ask the chat route itself
            return
        except (openai.APIError, TimeoutError, ValueError):
            await self._check_by_chat(timeout)
            return
        names = [name for name in (getattr(m, "id", None) for m in getattr(page, "data", None) or []) if name]
        if names and self._name not in names:
            listed = first_of([str(name) for name in names], 10)
            raise ModelError(self._unknown_model(f"it serves: {listed}"))

    async def _check_by_chat(self, timeout: float) -> None:
        """For an endpoint without usable model routes: a one-token chat request must come back as a chat
        completion. A refused key and an unknown model are named; so is any other answer, since a run made on
        an endpoint that is not an OpenAI-compatible API would only spend its retries."""
        problem = ""
        for attempt in range(1, _CHECK_ATTEMPTS + 1):
            try:
                with anyio.fail_after(timeout):
                    completion = await self._client.chat.completions.create(
                        model=self._name,
                        messages=[{"role": "user", "content": "Answer with one word: ready?"}],
                        max_completion_tokens=1,
                        timeout=timeout,
                    )
            except openai.APIStatusError as err:
                if (refused := self._refusal(err)) is not None:
                    raise refused from None
                problem = f"answered {err.status_code} ({_endpoint_message(err)})"
                if err.status_code not in _CHECK_AGAIN:
                    break
            except (openai.APIConnectionError, TimeoutError) as err:
                problem = "did not answer in time" if _is_timeout(err) else "refused the connection"
            except (openai.APIResponseValidationError, ValueError):
                problem = "answered with something that is not JSON"
                break
            else:
                if isinstance(completion, ChatCompletion) and completion.choices:
                    return
                problem = "answered 200 with something that is not a chat completion (no choices)"
                break
            if attempt < _CHECK_ATTEMPTS:
                await anyio.sleep(min(self._config.backoff_s, 1.0) * attempt)
        raise ModelError(
            f"the endpoint at {self._url} is not an OpenAI-compatible chat API: GET /models did not list models and "
            f"a one-token POST /chat/completions {problem}; check {self._source} (OpenAI-compatible servers "
            "usually end in /v1). No run was made."
        )


def _is_timeout(err: BaseException) -> bool:
    return isinstance(err, openai.APITimeoutError | TimeoutError)


def _count(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _shorten(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _endpoint_message(err: openai.APIStatusError) -> str:
    """The endpoint's own words: the error body's message, else its text."""
    body = err.body
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                return _shorten(value)
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                return _shorten(value["message"])
    if isinstance(body, str) and body.strip():
        return _shorten(body)
    return _shorten(err.message) or f"HTTP {err.status_code}"


_MODEL_MISSING = re.compile(
    r"model\b.{0,100}?\b(does not exist|doesn't exist|not found|not exist)|\b(unknown|invalid|no such) model\b",
    re.IGNORECASE,
)


def _says_model_missing(status: int, code: str | None, message: str) -> bool:
    """OpenAI: 404 `model_not_found`; vLLM: 404 or 400 "The model `x` does not exist"."""
    if code == "model_not_found":
        return True
    return status in (400, 404) and _MODEL_MISSING.search(message) is not None


def _retry_after(err: openai.APIStatusError) -> float | None:
    """Seconds from `retry-after-ms` or `Retry-After` (seconds or an HTTP date), if the answer has them."""
    headers = err.response.headers
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(ms) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
