"""Proxy configuration: flags, routes.toml, STREAMBRIDGE_* variables, credentials from the
environment only, and the ``serve`` command."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from streambridge.bridge import ConfigError, build_config
from streambridge.cli import serve as serve_module

SECRET = "tok-3f9a-never-printed"


def test_one_route_from_flags_with_defaults() -> None:
    cfg = build_config(upstream="https://agents.internal/agent", source="adonis", target="agentkit", environ={})
    assert (cfg.host, cfg.port) == ("127.0.0.1", 8787)  # loopback unless told otherwise
    (route,) = cfg.routes
    assert (route.path, route.source, route.target) == ("/", "nest", "agentkit")
    assert route.heartbeat == 15.0 and route.forward_auth is False and route.request_mode == "translate"


def test_credentials_come_from_the_environment_and_are_never_shown() -> None:
    cfg = build_config(
        upstream="http://u/",
        source="agentkit",
        target="nest",
        path="support",
        upstream_headers=["Authorization=env:TOKEN", "x-actor-id=u1"],
        environ={"TOKEN": SECRET},
    )
    route = cfg.routes[0]
    assert route.path == "/support/"
    assert dict(route.headers) == {"Authorization": SECRET, "x-actor-id": "u1"}
    assert SECRET not in repr(route) and SECRET not in repr(cfg) and "Authorization" in repr(route)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("Authorization=env:MISSING", "environment variable 'MISSING' is not set"),
        ("Authorization", "expected NAME=env:VAR"),
        ("Host=env:X", "managed by the proxy"),
    ],
)
def test_bad_headers(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        build_config(
            upstream="http://u/", source="agentkit", target="nest", upstream_headers=[spec], environ={"X": SECRET}
        )
    assert SECRET not in str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"upstream": "http://u/", "source": "agentkit"}, "together"),
        ({"upstream": "file:///etc/passwd", "source": "agentkit", "target": "nest"}, "absolute http"),
        ({"upstream": "http://u/", "source": "klingon", "target": "nest"}, "unknown protocol"),
        ({}, "no route"),
    ],
)
def test_bad_routes(kwargs, message) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(environ={}, **kwargs)


def test_routes_toml_with_defaults_server_table_and_environment(tmp_path) -> None:
    path = tmp_path / "routes.toml"
    path.write_text(
        """
[server]
port = 9000
drain_timeout = 3

[defaults]
idle_timeout = 120

[[routes]]
name = "support"
path = "/support"
upstream = "https://agents.internal/agent"
from = "nest"
to = "agentkit"
headers = { Authorization = "env:SUPPORT_TOKEN" }
heartbeat = 5
cors_origins = ["https://app.example"]
forward_headers = ["X-Actor-Id", "x-actor-role"]

[[routes]]
path = "/ops/"
upstream = "ws://127.0.0.1:7000/stream"
from = "oma"
to = "nest"
request_mode = "passthrough"
""",
        encoding="utf-8",
    )
    env = {"SUPPORT_TOKEN": SECRET, "STREAMBRIDGE_MAX_FRAME_BYTES": "65536", "STREAMBRIDGE_HEARTBEAT": "9"}
    cfg = build_config(config_file=path, environ=env)
    assert (cfg.host, cfg.port, cfg.drain_timeout) == ("127.0.0.1", 9000, 3.0)
    support, ops = cfg.routes
    assert support.name == "support" and support.path == "/support/"
    assert support.headers["Authorization"] == SECRET
    assert support.heartbeat == 5.0  # the route's own value wins
    assert support.idle_timeout == 120.0 and support.max_frame_bytes == 65536
    assert support.cors_origins == ("https://app.example",)
    assert support.forward_headers == ("x-actor-id", "x-actor-role") and ops.forward_headers == ()
    assert ops.name == "route2" and ops.request_mode == "passthrough" and ops.heartbeat == 9.0


def test_routes_toml_errors(tmp_path) -> None:
    path = tmp_path / "routes.toml"
    path.write_text(
        '[[routes]]\npath = "/"\nupstream = "http://u/"\nfrom = "nest"\nto = "oma"\n'
        '[[routes]]\npath = "/"\nupstream = "http://v/"\nfrom = "nest"\nto = "oma"\n'
    )
    with pytest.raises(ConfigError, match="two routes are mounted at '/'"):
        build_config(config_file=path, environ={})
    path.write_text('[[routes]]\npath = "/"\nupstream = "http://u/"\nfrom = "nest"\nto = "oma"\nheartbeet = 3\n')
    with pytest.raises(ConfigError, match="unknown setting 'heartbeet'"):
        build_config(config_file=path, environ={})
    path.write_text('[[routes]]\npath = "/"\n')
    with pytest.raises(ConfigError, match="missing 'upstream'"):
        build_config(config_file=path, environ={})


def _cli() -> typer.Typer:
    """The command registered the way the CLI app does it."""
    app = typer.Typer()
    app.command("serve")(serve_module.serve_command)
    app.command("noop")(lambda: None)  # two commands: "serve" stays a subcommand
    return app


def test_serve_command_flags_and_environment(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(serve_module.bridge_server, "run_app", seen.append)
    env = {
        "STREAMBRIDGE_UPSTREAM": "http://127.0.0.1:3000/agent",
        "STREAMBRIDGE_FROM": "nest",
        "STREAMBRIDGE_TO": "agentkit",
        "STREAMBRIDGE_PORT": "9999",
        "STREAMBRIDGE_HEARTBEAT": "2.5",
        "UP_TOKEN": SECRET,
    }
    result = CliRunner().invoke(
        _cli(),
        [
            "serve",
            "--path",
            "/chat",
            "--upstream-header",
            "Authorization=env:UP_TOKEN",
            "--log-json",
            "--cors-origin",
            "https://a.example",
            "--forward-header",
            "X-Actor-Id",
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    (cfg,) = seen
    assert (cfg.host, cfg.port, cfg.log_json) == ("127.0.0.1", 9999, True)
    route = cfg.routes[0]
    assert (route.path, route.source, route.target, route.heartbeat) == ("/chat/", "nest", "agentkit", 2.5)
    assert route.headers == {"Authorization": SECRET} and route.cors_origins == ("https://a.example",)
    assert route.forward_headers == ("x-actor-id",)
    assert SECRET not in result.output


def test_serve_command_reports_config_errors(monkeypatch) -> None:
    monkeypatch.setattr(serve_module.bridge_server, "run_app", lambda cfg: None)
    result = CliRunner().invoke(
        _cli(),
        [
            "serve",
            "--upstream",
            "http://u/",
            "--from",
            "nest",
            "--to",
            "agentkit",
            "--upstream-header",
            "Authorization=env:NOPE_NOT_SET",
        ],
        env={"NOPE_NOT_SET": None},  # type: ignore[dict-item]
    )
    assert result.exit_code == 2
    assert "environment variable 'NOPE_NOT_SET' is not set" in result.output


# -- the run log -----------------------------------------------------------------------------


def test_the_run_log_is_in_memory_by_default_and_set_by_flag_environment_or_routes_toml(tmp_path) -> None:
    route = {"upstream": "http://127.0.0.1:3000/agent", "source": "nest", "target": "agentkit", "environ": {}}
    default = build_config(**route)
    assert (default.run_log, default.owner_header, default.routes[0].resume_grace) == ("memory", None, 30.0)
    flagged = build_config(**route, run_log="redis://:pw@cache:6379/0", owner_header="X-User-Id")
    assert (flagged.run_log, flagged.owner_header) == ("redis://:pw@cache:6379/0", "X-User-Id")
    env = {"STREAMBRIDGE_RUN_LOG": "off", "STREAMBRIDGE_RUN_LOG_TTL": "60", "STREAMBRIDGE_RESUME_GRACE": "5"}
    from_env = build_config(**{**route, "environ": env})
    assert (from_env.run_log, from_env.run_log_ttl, from_env.routes[0].resume_grace) == ("off", 60.0, 5.0)
    toml = tmp_path / "routes.toml"
    toml.write_text(
        '[server]\nrun_log = "redis://127.0.0.1:6379/1"\nrun_log_lease = 2\nowner_header = "X-Gw-User"\n'
        '[[routes]]\npath = "/"\nupstream = "http://u/"\nfrom = "nest"\nto = "oma"\nresume_grace = 0\n'
    )
    filed = build_config(config_file=toml, environ={})
    assert (filed.run_log, filed.run_log_lease, filed.owner_header) == ("redis://127.0.0.1:6379/1", 2.0, "X-Gw-User")
    assert filed.routes[0].resume_grace == 0.0


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"run_log": "mysql://:secret@db/x"}, "expected memory, off or a redis:// URL"),
        ({"environ": {"STREAMBRIDGE_RUN_LOG_TTL": "0"}}, "run_log_ttl must be positive"),
        ({"environ": {"STREAMBRIDGE_RUN_LOG_LEASE": "soon"}}, "run_log_lease 'soon' is not a number"),
    ],
)
def test_a_bad_run_log_setting_is_a_config_error_that_shows_no_secret(settings, message) -> None:
    route = {"upstream": "http://127.0.0.1:3000/agent", "source": "nest", "target": "agentkit", "environ": {}}
    with pytest.raises(ConfigError, match=message) as caught:
        build_config(**{**route, **settings})
    assert "secret" not in str(caught.value)


def test_serve_takes_the_run_log_flags(monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(serve_module.bridge_server, "run_app", seen.append)
    args = ["serve", "--upstream", "http://127.0.0.1:3000/agent", "--from", "nest", "--to", "ai-sdk"]
    args += ["--run-log", "off", "--resume-grace", "0", "--owner-header", "X-User-Id"]
    result = CliRunner().invoke(_cli(), args, env={})
    assert result.exit_code == 0, result.output
    (cfg,) = seen
    assert (cfg.run_log, cfg.owner_header, cfg.routes[0].resume_grace) == ("off", "X-User-Id", 0.0)
