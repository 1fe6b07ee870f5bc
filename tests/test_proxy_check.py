"""``serve --check``: the configuration checked as the proxy would start with it, the Redis run
log reached, a summary that names no secret, and nothing listening; and the bounds a routes.toml
or a variable can say that the flags' own minimums refuse."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from streambridge.bridge import ConfigError, build_config
from streambridge.cli import serve as serve_module

from .redis_support import RedisServer, free_port

SECRET = "tok-3f9a-never-printed"
ROUTE = ["--upstream", "http://127.0.0.1:3000/agent", "--from", "nest", "--to", "ai-sdk"]


def _cli() -> typer.Typer:
    app = typer.Typer()
    app.command("serve")(serve_module.serve_command)
    app.command("noop")(lambda: None)  # two commands: "serve" stays a subcommand
    return app


@pytest.fixture
def nothing_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--check`` starts no server and no worker: either would fail the test."""

    def refuse(*args: object) -> None:
        raise AssertionError("--check started the proxy")

    monkeypatch.setattr(serve_module.bridge_server, "run_app", refuse)
    monkeypatch.setattr(serve_module.bridge_workers, "run_workers", refuse)


def check(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(_cli(), ["serve", "--check", *args], env=env or {})


def one_error(result: Result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("streambridge: error: ")]
    assert len(errors) == 1, result.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def test_a_good_configuration_is_summarised_and_passes(nothing_listens: None) -> None:
    result = check(*ROUTE, "--upstream-header", "Authorization=env:UP_TOKEN", env={"UP_TOKEN": SECRET})
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "listen 127.0.0.1:8787; run log memory"
    assert lines[1] == (
        "route 'default' at /: ai-sdk clients -> nest upstream http://127.0.0.1:3000/agent "
        "(translate, fidelity client; upstream headers Authorization)"
    )
    assert lines[-1] == "check passed: serve would start with this configuration"
    assert SECRET not in result.output


def test_every_route_of_a_routes_file_is_checked(tmp_path: Path, nothing_listens: None) -> None:
    toml = tmp_path / "routes.toml"
    toml.write_text(
        '[server]\nhost = "0.0.0.0"\nport = 9000\n'
        '[[routes]]\nname = "support"\npath = "/support/"\nupstream = "https://agents.internal/turn"\n'
        'from = "agentkit"\nto = "nest"\n'
        '[[routes]]\nname = "ops"\npath = "/ops/"\nupstream = "ws://127.0.0.1:7000/stream"\n'
        'from = "agentkit"\nto = "klingon"\n'
    )
    one_error(check("--config", str(toml)), 1, "route 'ops'", "--to: unknown protocol 'klingon'")
    toml.write_text(toml.read_text().replace('"klingon"', '"oma"'))
    result = check("--config", str(toml))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [
        "listen 0.0.0.0:9000; run log memory",
        "route 'support' at /support/: nest clients -> agentkit upstream https://agents.internal/turn "
        "(translate, fidelity client)",
        "route 'ops' at /ops/: oma clients -> agentkit upstream ws://127.0.0.1:7000/stream (translate, fidelity client)",
    ]


@pytest.mark.parametrize(
    ("args", "env", "fragments"),
    [
        (["--upstream", "http://[bad", "--from", "nest", "--to", "oma"], {}, ["absolute http(s)://"]),
        (ROUTE, {"STREAMBRIDGE_CONNECT_TIMEOUT": "-5"}, ["connect_timeout must not be negative"]),
        (ROUTE, {"STREAMBRIDGE_DRAIN_TIMEOUT": "soon"}, ["drain_timeout 'soon' is not a number"]),
        ([*ROUTE, "--upstream-header", "Authorization=env:NOT_SET"], {}, ["'NOT_SET' is not set"]),
        ([*ROUTE, "--workers", "2"], {}, ["2 workers need the Redis run log"]),
    ],
)
def test_a_configuration_the_proxy_would_refuse_fails_the_check_with_exit_1(
    args: list[str], env: dict[str, str], fragments: list[str], nothing_listens: None
) -> None:
    one_error(check(*args, env=env), 1, *fragments)


def test_a_usage_error_is_exit_2(nothing_listens: None) -> None:
    assert check(*ROUTE, "--workers", "0").exit_code == 2
    assert check(*ROUTE, "--port", "eighty").exit_code == 2


def test_the_redis_run_log_must_answer(redis_server: RedisServer, nothing_listens: None) -> None:
    result = check(*ROUTE, "--run-log", redis_server.url, "--port", "8800", "--workers", "2")
    assert result.exit_code == 0, result.stderr
    assert f"listen 127.0.0.1:8800, 2 workers; run log {redis_server.url}" in result.stdout
    assert f"run log {redis_server.url}: reachable (PING answered)" in result.stdout
    nobody = f"redis://:{SECRET}@127.0.0.1:{free_port()}/0"
    error = one_error(check(*ROUTE, "--run-log", nobody), 1, "is not reachable", "Error 111 connecting to")
    assert SECRET not in error and error.startswith(
        f"streambridge: error: run log redis://127.0.0.1:{nobody.rsplit(':', 1)[1]} is not reachable"
    )


def test_what_is_legal_but_surely_not_meant_is_a_warning(nothing_listens: None) -> None:
    result = check(*ROUTE, "--cors-origin", "*", "--forward-auth")
    assert result.exit_code == 0, result.stderr
    assert "streambridge: warning: route 'default': cors_origins '*' with forward_auth" in result.stderr


# -- bounds and shapes refused whatever their source (the serve command refuses them too) -------


def _route_toml(tmp_path: Path, line: str) -> Path:
    toml = tmp_path / "routes.toml"
    toml.write_text(f'[[routes]]\npath = "/"\nupstream = "http://u/"\nfrom = "nest"\nto = "oma"\n{line}\n')
    return toml


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("idle_timeout = -5", "idle_timeout must not be negative"),
        ("connect_timeout = -1", "connect_timeout must not be negative"),
        ("heartbeat = -2", "heartbeat must not be negative"),
        ("max_frame_bytes = 0", "max_frame_bytes must be at least 1 byte"),
        ("max_request_bytes = -1", "max_request_bytes must be at least 1 byte"),
        ('cors_origins = ["https://app.example/"]', "(a browser sends 'https://app.example')"),
        ('cors_origins = ["https://app.example:443"]', "(a browser sends 'https://app.example')"),
        ('cors_origins = ["app.example"]', "cors origin 'app.example' is not scheme://host[:port]"),
        ('control_url = "ftp://u/control"', "control_url must be an absolute http(s):// URL"),
    ],
)
def test_a_bound_or_shape_that_cannot_mean_anything_is_refused(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        build_config(config_file=_route_toml(tmp_path, line), environ={})


def test_good_origins_and_control_urls_pass(tmp_path: Path) -> None:
    line = 'cors_origins = ["*", "https://app.example", "http://localhost:5173", "null"]\ncontrol_url = "http://c/"'
    route = build_config(config_file=_route_toml(tmp_path, line), environ={}).routes[0]
    assert route.cors_origins == ("*", "https://app.example", "http://localhost:5173", "null")


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"STREAMBRIDGE_DRAIN_TIMEOUT": "soon"}, "drain_timeout 'soon' is not a number of seconds"),
        ({"STREAMBRIDGE_DRAIN_TIMEOUT": "-1"}, "drain_timeout must not be negative"),
        ({"STREAMBRIDGE_MAX_UPSTREAM_CONNECTIONS": "0"}, "max_upstream_connections must be positive"),
    ],
)
def test_server_bounds_from_the_environment_are_checked(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(upstream="http://u/", source="nest", target="oma", environ=environ)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"workers": 2}, "2 workers need the Redis run log"),
        ({"workers": 2, "run_log": "off"}, "not 'off'"),
        ({"workers": 3, "run_log": "redis://r:6379/0", "port": 0}, "3 workers need a fixed --port"),
        ({"workers": 2, "run_log": "redis://r:6379/0", "inspect": True}, "use it with one worker"),
    ],
)
def test_several_workers_need_a_shared_run_log_and_a_fixed_port(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_config(upstream="http://u/", source="nest", target="oma", environ={}, **kwargs)  # type: ignore[arg-type]
    ok = build_config(
        upstream="http://u/",
        source="nest",
        target="oma",
        environ={"STREAMBRIDGE_WORKERS": "2"},
        run_log="redis://r:6379/0",
    )
    assert ok.workers == 2
