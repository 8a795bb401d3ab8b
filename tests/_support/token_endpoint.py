"""A local OAuth 2 token endpoint (client credentials grant) for the OAUTHBEARER tests.

It checks HTTP basic authentication against one client id and secret and answers
``{"access_token": ..., "expires_in": ...}`` from a list of tokens, counting the requests, so that
a test can see when the producer fetched a token. Loopback only.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["TokenEndpoint", "token_endpoint"]


class TokenEndpoint:
    """State shared with the request handler: what to accept, what to hand out, what happened."""

    def __init__(self, client_id: str, client_secret: str, tokens: list[str],
                 expires_in: float | None) -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.tokens = tokens
        self.expires_in = expires_in
        self.requests = 0
        self.refused = 0
        self.fetched = threading.Condition()
        self.url = ""

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        with self.fetched:
            return self.fetched.wait_for(lambda: self.requests >= count, timeout)


def _handler(state: TokenEndpoint) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: the tests scan output for secrets, and this is not the code under test

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            form = urllib.parse.parse_qs(self.rfile.read(length).decode())
            expected = "Basic " + base64.b64encode(
                f"{urllib.parse.quote(state.client_id)}:{urllib.parse.quote(state.client_secret)}".encode()
            ).decode()
            with state.fetched:
                state.requests += 1
                state.fetched.notify_all()
                ok = self.headers.get("Authorization") == expected and form.get("grant_type") == [
                    "client_credentials"]
                if not ok:
                    state.refused += 1
                token = state.tokens[min(state.requests - 1, len(state.tokens) - 1)]
            if not ok:
                self.send_response(401, "Unauthorized")
                self.end_headers()
                return
            body: dict[str, Any] = {"access_token": token, "token_type": "Bearer"}
            if state.expires_in is not None:
                body["expires_in"] = state.expires_in
            payload = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@contextmanager
def token_endpoint(client_id: str, client_secret: str, tokens: list[str],
                   expires_in: float | None = 3600) -> Iterator[TokenEndpoint]:
    state = TokenEndpoint(client_id, client_secret, tokens, expires_in)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    state.url = f"http://127.0.0.1:{server.server_address[1]}/oauth2/token"
    thread = threading.Thread(target=server.serve_forever, name="token-endpoint", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
