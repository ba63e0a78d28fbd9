"""The model client against a real HTTP server speaking the OpenAI API (no mocking of the SDK)."""

from __future__ import annotations

import re
import socket
import threading
import time
import urllib.request
from typing import Any

import anyio
import pytest

from adaexplore.agent._client import Message, ModelClient
from adaexplore.config import ModelConfig
from adaexplore.errors import ModelError
from tests.agent.fake_openai import Action, Fail, FakeOpenAI, Raw, Say, Slow

pytestmark = pytest.mark.anyio

KEY_ENV = "ADAEXPLORE_TEST_MODEL_KEY"
HELLO: list[Message] = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]


def config(base_url: str, **overrides: Any) -> ModelConfig:
    """Settings for tests: fast backoff, short timeout."""
    values: dict[str, Any] = {
        "name": "fake-model",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "timeout_s": 5.0,
        "max_retries": 3,
        "backoff_s": 0.01,
        "backoff_max_s": 0.05,
    }
    values.update(overrides)
    return ModelConfig(**values)


class Retries:
    """Records on_retry calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str, float]] = []

    def __call__(self, purpose: str, attempt: int, reason: str, delay: float) -> None:
        self.calls.append((purpose, attempt, reason, delay))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- normal replies ----------------------------------------------------------------------------------


async def test_normal_reply_carries_text_usage_cost_and_request_fields() -> None:
    with FakeOpenAI([Say("hi there", prompt_tokens=1000, completion_tokens=500)]) as fake:
        settings = config(
            fake.base_url, temperature=0.7, max_tokens=4096, price_input_per_mtok=2.0, price_output_per_mtok=8.0
        )
        async with ModelClient(settings, api_key="k") as client:
            reply = await client.complete(HELLO, purpose="test")
    assert reply.text == "hi there"
    assert reply.finish_reason == "stop"
    assert not reply.truncated
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1000, 500)
    assert reply.usage.cost_usd == pytest.approx(1000 * 2.0 / 1e6 + 500 * 8.0 / 1e6)
    assert reply.attempts == 1
    assert reply.model == "fake-model"
    assert 0 < reply.seconds < 5
    [body] = fake.requests
    assert body["model"] == "fake-model"
    assert body["messages"] == HELLO
    assert body["temperature"] == 0.7
    assert body["max_completion_tokens"] == 4096
    assert "reasoning_effort" not in body
    assert "max_tokens" not in body


async def test_reasoning_effort_sent_when_set_and_temperature_left_out_when_none() -> None:
    with FakeOpenAI([Say("ok")]) as fake:
        async with ModelClient(config(fake.base_url, temperature=None, reasoning_effort="high"), api_key="k") as client:
            await client.complete(HELLO, purpose="test")
    [body] = fake.requests
    assert body["reasoning_effort"] == "high"
    assert "temperature" not in body


async def test_free_endpoint_costs_nothing_and_missing_usage_counts_zero() -> None:
    body = b'{"id": "c", "object": "chat.completion", "created": 0, "model": "served-name", "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}}]}'  # noqa: E501
    with FakeOpenAI([Raw(body)]) as fake:
        async with ModelClient(config(fake.base_url, price_input_per_mtok=3.0), api_key="k") as client:
            reply = await client.complete(HELLO, purpose="test")
    assert reply.text == "x"
    assert reply.usage.input_tokens == reply.usage.output_tokens == 0
    assert reply.usage.cost_usd == 0
    assert reply.finish_reason == "unknown"
    assert reply.model == "served-name"


async def test_reply_cut_off_at_max_tokens_is_truncated() -> None:
    with FakeOpenAI([Say("def f(", finish_reason="length")]) as fake:
        async with ModelClient(config(fake.base_url), api_key="k") as client:
            reply = await client.complete(HELLO, purpose="test")
    assert reply.truncated
    assert reply.finish_reason == "length"
    assert reply.text == "def f("


async def test_no_content_gives_empty_text() -> None:
    with FakeOpenAI([Say(None, finish_reason="content_filter")]) as fake:
        async with ModelClient(config(fake.base_url), api_key="k") as client:
            reply = await client.complete(HELLO, purpose="test")
    assert reply.text == ""
    assert reply.finish_reason == "content_filter"
    assert not reply.truncated


async def test_responder_answers_after_the_script() -> None:
    def responder(body: dict[str, Any]) -> Action:
        return Say(f"echo {body['messages'][-1]['content']}")

    with FakeOpenAI([Say("scripted")], responder=responder) as fake:
        async with ModelClient(config(fake.base_url), api_key="k") as client:
            first = await client.complete(HELLO, purpose="test")
            second = await client.complete(HELLO, purpose="test")
    assert (first.text, second.text) == ("scripted", "echo hello")


# -- retried failures --------------------------------------------------------------------------------


async def test_429_then_success_uses_backoff() -> None:
    retries = Retries()
    with FakeOpenAI([Fail(429, "slow down", code="rate_limit_exceeded")]) as fake:
        fake.push(Say("ok"))
        async with ModelClient(config(fake.base_url), api_key="k", on_retry=retries) as client:
            reply = await client.complete(HELLO, purpose="review")
    assert reply.text == "ok"
    assert reply.attempts == 2
    assert len(fake.requests) == 2
    [(purpose, attempt, reason, delay)] = retries.calls
    assert (purpose, attempt, reason) == ("review", 1, "429 rate limited")
    assert 0.01 <= delay <= 0.02  # backoff_s * 2**0 + uniform(0, backoff_s)


@pytest.mark.parametrize(("header", "expected"), [("0.2", 0.2), ("100", 0.3)])
async def test_429_with_retry_after_waits_that_long_capped(header: str, expected: float) -> None:
    retries = Retries()
    with FakeOpenAI([Fail(429, "slow down", headers={"Retry-After": header}), Say("ok")]) as fake:
        settings = config(fake.base_url, backoff_max_s=0.3)
        async with ModelClient(settings, api_key="k", on_retry=retries) as client:
            start = anyio.current_time()
            reply = await client.complete(HELLO, purpose="test")
            elapsed = anyio.current_time() - start
    assert reply.attempts == 2
    [(_, _, reason, delay)] = retries.calls
    assert reason == "429 rate limited"
    assert delay == pytest.approx(expected)
    assert elapsed >= expected


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_then_success(status: int) -> None:
    retries = Retries()
    with FakeOpenAI([Fail(status, "overloaded"), Say("ok")]) as fake:
        async with ModelClient(config(fake.base_url), api_key="k", on_retry=retries) as client:
            reply = await client.complete(HELLO, purpose="test")
    assert reply.text == "ok"
    assert reply.attempts == 2
    assert [call[2] for call in retries.calls] == [f"{status} from the endpoint"]


async def test_503_retry_after_is_honoured() -> None:
    retries = Retries()
    with FakeOpenAI([Fail(503, "loading", headers={"Retry-After": "0.1"}), Say("ok")]) as fake:
        async with ModelClient(config(fake.base_url, backoff_max_s=1.0), api_key="k", on_retry=retries) as client:
            await client.complete(HELLO, purpose="test")
    assert retries.calls[0][3] == pytest.approx(0.1)


MALFORMED = {
    "invalid JSON": Raw(b"{not json"),
    "empty body": Raw(b""),
    "JSON without choices": Raw(b'{"id": "x", "object": "chat.completion"}'),
    "empty choices": Raw(b'{"id": "x", "choices": []}'),
    "choice without message": Raw(b'{"id": "x", "choices": [{"index": 0, "finish_reason": "stop"}]}'),
    "choices not objects": Raw(b'{"choices": [1, 2]}'),
    "JSON null": Raw(b"null"),
    "JSON list": Raw(b"[1, 2]"),
    "HTML page": Raw(b"<html><body>proxy error</body></html>", content_type="text/html"),
    "error object with 200": Raw(b'{"error": {"message": "upstream failed"}}'),
}


@pytest.mark.parametrize("bad", MALFORMED.values(), ids=MALFORMED.keys())
async def test_malformed_reply_then_success(bad: Raw) -> None:
    retries = Retries()
    with FakeOpenAI([bad, Say("ok")]) as fake:
        async with ModelClient(config(fake.base_url), api_key="k", on_retry=retries) as client:
            reply = await client.complete(HELLO, purpose="test")
    assert reply.text == "ok"
    assert reply.attempts == 2
    [(_, _, reason, _)] = retries.calls
    assert reason.startswith("malformed reply")


async def test_malformed_replies_exhausting_retries_name_base_url() -> None:
    with FakeOpenAI([Raw(b"{not json")] * 3) as fake:
        async with ModelClient(config(fake.base_url, max_retries=2), api_key="k") as client:
            with pytest.raises(ModelError, match="--base-url") as caught:
                await client.complete(HELLO, purpose="test")
    assert "3 attempts" in str(caught.value)
    assert "malformed reply" in str(caught.value)


async def test_timeout_then_success() -> None:
    retries = Retries()
    with FakeOpenAI([Slow(3.0, Say("late")), Say("ok")]) as fake:
        async with ModelClient(config(fake.base_url, timeout_s=0.4), api_key="k", on_retry=retries) as client:
            reply = await client.complete(HELLO, purpose="test")
    assert reply.text == "ok"
    assert reply.attempts == 2
    assert reply.seconds < 0.4
    assert [call[2] for call in retries.calls] == ["timed out after 0.4 s"]


async def test_timeouts_exhausting_retries_say_raise_timeout() -> None:
    with FakeOpenAI([Slow(3.0, Say("late"))] * 2) as fake:
        async with ModelClient(config(fake.base_url, timeout_s=0.3, max_retries=1), api_key="k") as client:
            start = anyio.current_time()
            with pytest.raises(ModelError, match="--timeout") as caught:
                await client.complete(HELLO, purpose="test")
            elapsed = anyio.current_time() - start
    message = str(caught.value)
    assert "2 attempts" in message
    assert fake.base_url in message
    assert "timed out after 0.3 s" in message
    assert elapsed < 2.0  # each attempt was cut off at its timeout, not at the server's 3 s


async def test_rate_limits_exhausting_retries_say_lower_concurrency() -> None:
    retries = Retries()
    with FakeOpenAI([Fail(429, "slow down")] * 3) as fake:
        async with ModelClient(config(fake.base_url, max_retries=2), api_key="k", on_retry=retries) as client:
            with pytest.raises(ModelError, match="--concurrency") as caught:
                await client.complete(HELLO, purpose="test")
    assert "429 rate limited ×3" in str(caught.value)
    assert [call[1] for call in retries.calls] == [1, 2]
    assert len(fake.requests) == 3


async def test_server_errors_exhausting_retries_are_reported() -> None:
    with FakeOpenAI() as fake:  # an empty script: every request gets 500 "script exhausted"
        async with ModelClient(config(fake.base_url, max_retries=1), api_key="k") as client:
            with pytest.raises(ModelError, match="500 from the endpoint") as caught:
                await client.complete(HELLO, purpose="test")
    assert "2 attempts" in str(caught.value)
    assert len(fake.requests) == 2


async def test_unreachable_endpoint_names_url_and_base_url() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    retries = Retries()
    async with ModelClient(config(url, max_retries=1), on_retry=retries) as client:
        with pytest.raises(ModelError, match="--base-url") as caught:
            await client.complete(HELLO, purpose="test")
    assert f"is the server running at {url}?" in str(caught.value)
    assert [call[2] for call in retries.calls] == ["connection failed"]


# -- failures retrying will not fix ------------------------------------------------------------------


async def test_wrong_key_fails_at_once_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "wrong")
    with FakeOpenAI([Say("never")], api_key="right") as fake:
        async with ModelClient(config(fake.base_url)) as client:
            with pytest.raises(ModelError, match=KEY_ENV) as caught:
                await client.complete(HELLO, purpose="test")
    assert "--api-key-env" in str(caught.value)
    assert "401" in str(caught.value)
    assert len(fake.requests) == 1


async def test_missing_key_for_a_custom_endpoint_is_named_on_401(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with FakeOpenAI([Say("never")], api_key="right") as fake:
        async with ModelClient(config(fake.base_url)) as client:
            with pytest.raises(ModelError, match=f"{KEY_ENV} is not set"):
                await client.complete(HELLO, purpose="test")
    assert len(fake.requests) == 1


async def test_explicit_key_is_sent() -> None:
    with FakeOpenAI([Say("ok")], api_key="right") as fake:
        async with ModelClient(config(fake.base_url), api_key="right") as client:
            assert (await client.complete(HELLO, purpose="test")).text == "ok"


def test_no_key_for_the_openai_api_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelError, match=f"{KEY_ENV}.*--api-key-env"):
        ModelClient(ModelConfig(name="gpt-5", api_key_env=KEY_ENV))


async def test_unknown_model_fails_at_once() -> None:
    with FakeOpenAI([Say("never")]) as fake:
        async with ModelClient(config(fake.base_url, name="no-such-model"), api_key="k") as client:
            with pytest.raises(ModelError, match="does not know model 'no-such-model'") as caught:
                await client.complete(HELLO, purpose="test")
    assert "--model" in str(caught.value)
    assert fake.base_url in str(caught.value)
    assert len(fake.requests) == 1


async def test_vllm_style_400_for_unknown_model_is_a_model_error() -> None:
    with FakeOpenAI([Fail(400, "The model `Qwen/Qwen3-8B` does not exist.")]) as fake:
        async with ModelClient(config(fake.base_url), api_key="k") as client:
            with pytest.raises(ModelError, match="--model"):
                await client.complete(HELLO, purpose="test")
    assert len(fake.requests) == 1


async def test_other_4xx_reports_the_endpoint_message_and_what_was_sent() -> None:
    message = "max_completion_tokens is too large: 100000. This model supports at most 32768 completion tokens"
    with FakeOpenAI([Fail(400, message, code="invalid_value")]) as fake:
        async with ModelClient(config(fake.base_url, max_tokens=100000), api_key="k") as client:
            with pytest.raises(ModelError) as caught:
                await client.complete(HELLO, purpose="test")
    text = str(caught.value)
    assert "400" in text
    assert "is too large" in text
    assert "'fake-model'" in text
    assert "max_completion_tokens 100000" in text
    assert len(fake.requests) == 1


# -- concurrency -------------------------------------------------------------------------------------


async def test_concurrency_limit_holds() -> None:
    with FakeOpenAI(responder=lambda body: Slow(0.2, Say("ok"))) as fake:
        async with ModelClient(config(fake.base_url, concurrency=2), api_key="k") as client:
            replies: list[str] = []

            async def one() -> None:
                replies.append((await client.complete(HELLO, purpose="test")).text)

            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(one)
    assert replies == ["ok"] * 6
    assert fake.max_in_flight == 2


async def test_retry_sleeps_outside_the_limiter() -> None:
    # With concurrency 1, a request waiting out a Retry-After must not hold up another request meanwhile.
    def echo(body: dict[str, Any]) -> Action:
        return Say(body["messages"][-1]["content"])

    with FakeOpenAI([Fail(429, "wait", headers={"Retry-After": "0.5"})], responder=echo) as fake:
        settings = config(fake.base_url, concurrency=1, backoff_max_s=1.0)
        async with ModelClient(settings, api_key="k") as client:
            done: list[str] = []

            async def one(name: str, delay: float) -> None:
                await anyio.sleep(delay)
                done.append((await client.complete([{"role": "user", "content": name}], purpose="test")).text)

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "first", 0.0)
                tg.start_soon(one, "second", 0.1)
    assert done == ["second", "first"]


# -- check() -----------------------------------------------------------------------------------------


async def test_check_passes_for_a_known_model() -> None:
    with FakeOpenAI(models=["fake-model", "other"]) as fake:
        async with ModelClient(config(fake.base_url), api_key="k") as client:
            await client.check()
    assert fake.requests == []  # no chat request was spent


async def test_check_fails_for_an_unknown_model() -> None:
    with FakeOpenAI() as fake:
        async with ModelClient(config(fake.base_url, name="nope"), api_key="k") as client:
            with pytest.raises(ModelError, match=r"does not know model 'nope'.*--model"):
                await client.check()


async def test_check_fails_for_a_wrong_key() -> None:
    with FakeOpenAI(api_key="right") as fake:
        async with ModelClient(config(fake.base_url), api_key="wrong") as client:
            with pytest.raises(ModelError, match=f"{KEY_ENV}.*--api-key-env"):
                await client.check()


async def test_check_uses_the_model_list_where_there_is_no_retrieve_route() -> None:
    with FakeOpenAI(models=["served"], model_routes="list") as fake:
        async with ModelClient(config(fake.base_url, name="served"), api_key="k") as client:
            await client.check()
        async with ModelClient(config(fake.base_url, name="other"), api_key="k") as client:
            with pytest.raises(ModelError, match=r"does not know model 'other'.*it serves: served"):
                await client.check()


async def test_check_asks_the_chat_route_where_there_are_no_model_routes() -> None:
    # a one-token chat request stands in for GET /models: the key and the model name are still checked
    # before any run starts
    with FakeOpenAI([Say("yes")], model_routes="none", api_key="k") as fake:
        async with ModelClient(config(fake.base_url), api_key="k") as client:
            await client.check()
        assert [r.get("max_completion_tokens") for r in fake.requests] == [1]
        async with ModelClient(config(fake.base_url, name="anything"), api_key="k") as client:
            with pytest.raises(ModelError, match="anything"):
                await client.check()
        async with ModelClient(config(fake.base_url), api_key="wrong") as client:
            with pytest.raises(ModelError, match=r"refused the API key|401"):
                await client.check()


async def test_check_fails_for_an_unreachable_endpoint() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    async with ModelClient(config(url)) as client:
        with pytest.raises(ModelError, match=f"unreachable.*{re.escape(url)}.*--base-url"):
            await client.check()


# -- the fake server itself --------------------------------------------------------------------------


def test_fake_stops_promptly_while_a_slow_answer_is_pending() -> None:
    with FakeOpenAI([Slow(30.0, Say("never"))]) as fake:
        request = urllib.request.Request(
            f"{fake.base_url}/chat/completions",
            data=b'{"model": "fake-model", "messages": []}',
            headers={"Content-Type": "application/json"},
        )
        thread = threading.Thread(target=lambda: _ignore_errors(urllib.request.urlopen, request, timeout=10))
        thread.start()
        while fake.in_flight == 0:
            time.sleep(0.01)
        start = time.monotonic()
    assert time.monotonic() - start < 2.0
    thread.join(timeout=10)


def _ignore_errors(function: Any, *args: Any, **kwargs: Any) -> None:
    try:
        function(*args, **kwargs)
    except OSError:
        pass
