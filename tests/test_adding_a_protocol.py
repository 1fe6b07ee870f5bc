"""A new protocol is one package: ``tests/protocols/lines`` (a protocol made for this test) is
registered, and with no other file edited it goes through the laws, ``convert``, ``validate``,
``replay --serve`` and the proxy, in this process and, as a plugin, in a fresh one
(docs/adding-a-protocol.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from streambridge import codecs, translate
from streambridge.cli import replay_server as replay
from streambridge.events import Event, Terminal, TextDelta

from .cli_support import invoke
from .corpus import CODECS, ROOT, SCENARIOS, Findings, canonical, convert, decode, encode, golden, golden_name
from .protocols import lines
from .proxy_support import Upstream, proxy_config, start_proxy, stream_app, url_of
from .test_laws import assert_well_ordered
from .test_proxy_ops import golden_upstream

NEW = "lines"


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    codecs.register(lines.CODEC)
    try:
        yield
    finally:
        codecs.unregister(NEW)


# -- the laws --------------------------------------------------------------------------------


@pytest.mark.parametrize("source", CODECS)
def test_every_golden_crosses_the_new_protocol_and_comes_back(source: str) -> None:
    """One test per source walks every golden, failing once naming each failing file."""
    findings = Findings(f"goldens of {source} through {NEW}")
    for scenario in SCENARIOS:
        with findings.case(golden_name(scenario, source)):
            _check_crosses_the_new_protocol(scenario, source)
    findings.check()


def _check_crosses_the_new_protocol(scenario: str, source: str) -> None:
    data = golden(scenario, source)
    there = convert(source, NEW, data)
    assert canonical(decode(source, convert(NEW, source, there))) == canonical(decode(source, data))
    events = decode(NEW, there, strict=True)
    assert_well_ordered(NEW, events)
    assert sum(type(e) is Terminal for e in events) == 1
    assert b'"synthetic":true' not in there  # no carrier describes an invented event
    assert encode(NEW, events) == there  # its own output round-trips byte for byte


@pytest.mark.parametrize("scenario", ["plain-text", "approval", "truncated"])
def test_the_new_protocols_output_does_not_depend_on_chunking(scenario: str) -> None:
    there = convert("nest", NEW, golden(scenario, "nest"))
    decoder = codecs.get(NEW).decoder()
    events: list[Event] = []
    for i in range(len(there)):
        decoder.feed(there[i : i + 1], events)
    assert canonical(decoder.close(events)) == canonical(decode(NEW, there))


# -- the command line ------------------------------------------------------------------------


def test_convert_and_validate_know_the_new_protocol(tmp_path: Path) -> None:
    source = tmp_path / "run.sse"
    source.write_bytes(golden("plain-text", "agentkit"))
    converted = tmp_path / "run.ndjson"
    result = invoke("convert", source, "--to", NEW, "-o", converted)
    assert result.exit_code == 0, result.output
    assert b'{"type":"line","text":"Hello! "}' in converted.read_bytes()
    result = invoke("validate", converted)  # sniffed as the new protocol by its own sniff
    assert result.exit_code == 0, result.output
    assert NEW in result.output
    back = invoke("convert", converted, "--to", "agentkit")
    assert canonical(decode("agentkit", back.stdout_bytes)) == canonical(decode("agentkit", source.read_bytes()))


def test_validate_applies_the_new_protocols_own_rule(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    path.write_bytes(b'{"type":"line","text":"hi"}\n{"type":"line","text":""}\n{"type":"end","status":"succeeded"}\n')
    result = invoke("validate", path, "--json")
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["name"], f["frame"]) for f in findings] == [("LN001", "line-empty", 2)]
    assert invoke("validate", path, "--ignore", "ln001").exit_code == 0


def test_the_new_protocol_is_a_plugin_in_a_fresh_process(tmp_path: Path) -> None:
    source = tmp_path / "run.sse"
    source.write_bytes(golden("plain-text", "nest"))
    env = {**os.environ, "STREAMBRIDGE_PROTOCOLS": "tests.protocols.lines", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "streambridge", "convert", str(source), "--to", NEW],
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=True,
        timeout=60,
    )
    assert [e.text for e in decode(NEW, out.stdout) if type(e) is TextDelta] == [
        e.text for e in decode("nest", source.read_bytes()) if type(e) is TextDelta
    ]


async def test_replay_serves_the_new_protocol_from_its_surface(aiohttp_client, tmp_path: Path) -> None:
    source = tmp_path / "run.sse"
    source.write_bytes(golden("plain-text", "oma"))
    recording = replay.load_recording(source, None)
    client = await aiohttp_client(replay.make_replay_app([replay.render(recording, codecs.get(NEW), None)]))
    resp = await client.post("/", json={"prompt": "hi"})
    assert resp.status == 200
    assert resp.headers["Content-Type"] == "application/x-ndjson"
    served = decode(NEW, await resp.read())
    assert canonical(served) == canonical(decode(NEW, convert("oma", NEW, source.read_bytes())))
    assert type(served[-1]) is Terminal and served[-1].status == "succeeded"


# -- the proxy -------------------------------------------------------------------------------


async def test_the_proxy_serves_new_protocol_clients_from_any_backend(aiohttp_server, aiohttp_client) -> None:
    server = await aiohttp_server(golden_upstream(Upstream()))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", NEW))
    resp = await client.post("/", json={"prompt": "hi"})
    assert resp.status == 200
    body = await resp.read()
    served = b"".join(translate([golden("plain-text", "agentkit")], "agentkit", NEW, fidelity="client"))
    assert canonical(decode(NEW, body)) == canonical(decode(NEW, served))


async def test_the_proxy_puts_any_client_in_front_of_a_new_protocol_backend(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    answer = convert("agentkit", NEW, golden("plain-text", "agentkit"))

    async def chat(request: web.Request) -> web.Response:  # a backend of the new protocol
        await upstream.record(request)
        return web.Response(body=answer, content_type="application/x-ndjson")

    server = await aiohttp_server(stream_app(chat, "/up"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), NEW, "nest"))
    resp = await client.post("/agent/chat", json={"message": "hi"})
    assert resp.status == 201
    events = decode("nest", await resp.read())
    assert upstream.last_json == {"prompt": "hi"}  # the request in the new protocol's own shape
    assert [e.text for e in events if type(e) is TextDelta] == [
        e.text for e in decode("agentkit", golden("plain-text", "agentkit")) if type(e) is TextDelta
    ]
    assert type(events[-1]) is Terminal and events[-1].status == "succeeded"


def test_a_broken_plugin_is_one_warning_naming_it_and_the_others_load() -> None:
    codecs.unregister(NEW)  # (loaded again below, as a plugin)
    environ = {"STREAMBRIDGE_PROTOCOLS": "tests.no_such_protocol, tests.protocols, tests.protocols.lines"}
    with pytest.warns(codecs.PluginWarning) as said:
        codecs.load_plugins(environ)
    assert [str(w.message).split(":")[0] for w in said] == [
        "protocol plugin 'tests.no_such_protocol' not loaded",
        "protocol plugin 'tests.protocols' not loaded",  # a module with no CODEC
    ]
    assert "has no CODEC" in str(said[1].message)
    assert codecs.get(NEW) is lines.CODEC


def test_plugins_load_when_the_registry_is_first_asked_and_a_broken_one_is_one_line() -> None:
    env = {
        **os.environ,
        "STREAMBRIDGE_PROTOCOLS": "tests.protocols.lines,tests.no_such_protocol",
        "PYTHONPATH": str(ROOT),
    }
    probe = (
        "import sys, warnings; import streambridge\n"
        "assert 'tests.protocols.lines' not in sys.modules, 'loaded at import'\n"
        "with warnings.catch_warnings(record=True) as said:\n"
        "    warnings.simplefilter('always')\n"
        "    from streambridge import codecs; names = codecs.names()\n"
        "assert 'lines' in names and 'tests.protocols.lines' in sys.modules\n"
        "print(len(said), said[0].message)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("1 protocol plugin 'tests.no_such_protocol' not loaded: ModuleNotFoundError")
    cli = subprocess.run(
        [sys.executable, "-m", "streambridge", "protocols", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )
    assert cli.returncode == 0 and '"lines"' in cli.stdout
    assert cli.stderr.splitlines() == [
        "streambridge: warning: protocol plugin 'tests.no_such_protocol' not loaded: "
        "ModuleNotFoundError: No module named 'tests.no_such_protocol'"
    ]
