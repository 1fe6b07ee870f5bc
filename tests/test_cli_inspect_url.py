"""``streambridge inspect`` prints a URL that works, wherever it listens (issue 29)."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from .cli_support import GOLDEN, Proc

FILE = GOLDEN / "plain-text" / "nest.sse"


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _printed_url(proc: Proc) -> str:
    return proc.wait_for(r"inspecting \S+ at (http://\S+) \(Ctrl-C stops\)").group(1)


@pytest.mark.parametrize("token", [None, "s3cret-token"])
def test_on_every_address_the_printed_url_answers_and_the_bare_one_does_not(token: str | None) -> None:
    environ = {"STREAMBRIDGE_INSPECT_TOKEN": token or ""}
    proc = Proc("inspect", FILE, "--host", "0.0.0.0", "--port", "0", environ=environ)
    try:
        url = _printed_url(proc)
        assert url.startswith("http://127.0.0.1:")
        assert "?token=" in url
        if token:
            assert f"?token={token}#" in url
        assert _status(url) == 200
        bare = url.split("?")[0]
        assert _status(bare) == 403  # the token is what lets it in
        assert _status(bare + "api/streams?" + url.split("?")[1].split("#")[0]) == 200
    finally:
        proc.stop()


def test_on_loopback_the_url_needs_no_token() -> None:
    proc = Proc("inspect", FILE, "--port", "0", environ={"STREAMBRIDGE_INSPECT_TOKEN": ""})
    try:
        url = _printed_url(proc)
        assert "token" not in url
        assert _status(url) == 200
    finally:
        proc.stop()
