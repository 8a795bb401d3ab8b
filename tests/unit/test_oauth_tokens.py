"""OAUTHBEARER tokens: the cache kafka-python asks on the Sender thread, and the forms a provider may
take (the client-credentials provider, which needs a socket, is tested in tests/mock)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from txnproducer import errors
from txnproducer._internal.network.oauth_tokens import TokenCache, TokenProviderFailed, as_token_source
from txnproducer.oauth import OAuthBearerToken, jwt_expiry

WAIT_S = 5.0


class Source:
    """A provider whose answers the test scripts; each call is counted and signalled."""

    def __init__(self, answers: list[Callable[[], OAuthBearerToken]]) -> None:
        self.answers = answers
        self.calls = 0
        self.cond = threading.Condition()

    def __call__(self) -> OAuthBearerToken:
        with self.cond:
            answer = self.answers[min(self.calls, len(self.answers) - 1)]
            self.calls += 1
            self.cond.notify_all()
        return answer()

    def wait_calls(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.calls >= count, WAIT_S)


@pytest.fixture
def caches() -> Iterator[list[TokenCache]]:
    made: list[TokenCache] = []
    yield made
    for cache in made:
        cache.close()


def _cache(caches: list[TokenCache], source: Source) -> TokenCache:
    cache = TokenCache(source, "t")
    caches.append(cache)
    return cache


def test_the_first_token_is_fetched_when_the_producer_starts(caches: list[TokenCache]) -> None:
    source = Source([lambda: OAuthBearerToken("tok-1", time.time() + 3600, {"logicalCluster": "lkc-1"})])
    cache = _cache(caches, source)
    assert source.wait_calls(1)  # before any connection asked
    assert cache.token() == "tok-1"
    assert cache.extensions() == {"logicalCluster": "lkc-1"}
    assert cache.token() == "tok-1"
    assert source.calls == 1  # served from the cache


def test_a_token_is_replaced_before_it_expires(caches: list[TokenCache]) -> None:
    source = Source([lambda: OAuthBearerToken("short", time.time() + 1.0),
                     lambda: OAuthBearerToken("next", time.time() + 1.0)])  # and "next" again after it
    cache = _cache(caches, source)
    assert cache.token() == "short"
    # the second call comes at 80 % of the lifetime, without anyone asking; the third only once its
    # answer was stored (the next refresh is scheduled then): from here on the cache serves "next"
    assert source.wait_calls(3)
    assert cache.token() == "next"


def test_a_failed_refresh_keeps_serving_the_valid_token(caches: list[TokenCache]) -> None:
    def down() -> OAuthBearerToken:
        raise ConnectionError("endpoint down")

    # refreshed at 80 % of 3 s, retried 0.1 s later: the token is still valid for 0.5 s after that
    source = Source([lambda: OAuthBearerToken("still-valid", time.time() + 3.0), down])
    cache = _cache(caches, source)
    assert cache.token() == "still-valid"
    assert source.wait_calls(3)  # refresh failed and is retried with backoff
    assert cache.token() == "still-valid"


def test_no_valid_token_and_a_failing_provider_fails_fast(caches: list[TokenCache]) -> None:
    def down() -> OAuthBearerToken:
        raise ConnectionError("endpoint down")

    cache = _cache(caches, Source([down]))
    started = time.monotonic()
    with pytest.raises(TokenProviderFailed, match="endpoint down"):
        cache.token()
    assert time.monotonic() - started < 2.0


def test_a_token_without_expiry_is_fetched_for_each_authentication(caches: list[TokenCache]) -> None:
    counter = iter(range(100))
    source = Source([lambda: OAuthBearerToken(f"tok-{next(counter)}")])
    cache = _cache(caches, source)
    assert cache.token() == "tok-0"
    assert cache.token() == "tok-1"


def test_the_provider_forms() -> None:
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class KafkaPythonStyle(AbstractTokenProvider):  # type: ignore[misc]
        def token(self) -> str:
            return "kp"

        def extensions(self) -> dict[str, str]:
            return {"traceId": "abc"}

    class Duck:
        def token(self) -> str:
            return "duck"

    assert as_token_source(KafkaPythonStyle())() == OAuthBearerToken("kp", None, {"traceId": "abc"})
    assert as_token_source(Duck())().value == "duck"
    assert as_token_source(lambda: "bare")().value == "bare"
    with pytest.raises(TokenProviderFailed, match="returned a int"):
        as_token_source(lambda: 42)()


def test_tokens_and_extensions_are_checked_as_java_checks_them() -> None:
    with pytest.raises(errors.ConfigError, match="letters only"):
        OAuthBearerToken("t", None, {"auth": "x"})
    with pytest.raises(errors.ConfigError, match="letters only"):
        OAuthBearerToken("t", None, {"bad-name": "x"})
    with pytest.raises(errors.ConfigError, match="without whitespace"):
        OAuthBearerToken("two words")
    assert "secret-value" not in repr(OAuthBearerToken("secret-value", 1.0))


def test_jwt_expiry_is_read_from_the_claims() -> None:
    import base64
    import json

    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    jwt = f"{part({'alg': 'none'})}.{part({'sub': 'alice', 'exp': 1_900_000_000})}."
    assert jwt_expiry(jwt) == 1_900_000_000.0
    assert jwt_expiry("opaque-token") is None
