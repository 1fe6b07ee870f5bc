"""deploy/: the compose file's own command lines, and the image's, accepted by ``serve --check``
against the compose file's own configuration and a real Redis (no Docker); and the files that
name one another (ports, services, paths) agreeing, as docs/deploy.md quotes them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from typing import Any

import yaml

from .corpus import ROOT
from .redis_support import RedisServer

DEPLOY = ROOT / "deploy"
#: what compose's ``${VAR:?message}`` variables hold here (compose refuses to start without them)
REQUIRED = {"AGENT_AUTHORIZATION": "Bearer test-credential"}


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def proxies() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in compose()["services"].items() if s.get("command", [None])[0] == "serve"}


def interpolated(value: str) -> str:
    """Compose's ``${VAR:-default}`` and ``${VAR:?message}`` as compose would fill them here."""

    def fill(match: re.Match[str]) -> str:
        name, op, rest = match.group(1), match.group(2), match.group(3)
        if op == ":?":
            return REQUIRED[name]
        return rest

    return re.sub(r"\$\{(\w+)(:-|:\?)([^}]*)\}", fill, value)


def on_this_machine(args: list[str], volumes: list[str]) -> list[str]:
    """The command's container paths as the files they mount from deploy/."""
    mounts = {}
    for volume in volumes:
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            mounts[target] = str((DEPLOY / source).resolve())
    return [mounts.get(arg, arg) for arg in args]


def serve_check(args: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMBRIDGE_")}
    env |= {"PYTHONPATH": str(ROOT), **environment}
    return subprocess.run(
        [sys.executable, "-m", "streambridge", *args, "--check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compose_runs_two_proxy_instances_on_one_redis_behind_a_reverse_proxy() -> None:
    services = compose()["services"]
    assert set(proxies()) == {"proxy-a", "proxy-b"}
    assert "redis" in services and "caddy" in services
    for service in proxies().values():
        assert service["environment"]["STREAMBRIDGE_RUN_LOG"] == "redis://redis:6379/0"
        assert service["depends_on"]["redis"]["condition"] == "service_healthy"
        source = service["volumes"][0].split(":")[0]
        assert (DEPLOY / source).is_file()
    caddyfile = (DEPLOY / "Caddyfile").read_text()
    nginx = (DEPLOY / "nginx.conf").read_text()
    port = tomllib.loads((DEPLOY / "routes.toml").read_text())["server"]["port"]
    for name in proxies():
        assert f"{name}:{port}" in caddyfile and f"server {name}:{port}" in nginx
    assert "proxy_buffering off;" in nginx and "flush_interval -1" in caddyfile


def test_the_compose_command_lines_pass_serve_check_against_their_own_config(redis_server: RedisServer) -> None:
    for name, service in proxies().items():
        environment = {key: interpolated(str(value)) for key, value in service["environment"].items()}
        assert environment["STREAMBRIDGE_RUN_LOG"] == "redis://redis:6379/0"
        environment["STREAMBRIDGE_RUN_LOG"] = redis_server.url  # compose's redis, here
        done = serve_check(on_this_machine(service["command"], service["volumes"]), environment)
        assert done.returncode == 0, (name, done.stdout, done.stderr)
        assert "route 'chat' at /: ai-sdk clients -> nest upstream http://agent:3000/agent" in done.stdout
        assert ", 2 workers; run log " in done.stdout and "reachable (PING answered)" in done.stdout
        assert done.stdout.rstrip().endswith("check passed: serve would start with this configuration")
        assert REQUIRED["AGENT_AUTHORIZATION"] not in done.stdout + done.stderr
        without = {k: v for k, v in environment.items() if k != "AGENT_AUTHORIZATION"}
        missing = serve_check(on_this_machine(service["command"], service["volumes"]), without)
        assert missing.returncode == 1 and "'AGENT_AUTHORIZATION' is not set" in missing.stderr


def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text()


def test_the_image_default_command_passes_serve_check() -> None:
    (cmd,) = re.findall(r"^CMD (\[.*\])$", dockerfile(), re.MULTILINE)
    args = yaml.safe_load(cmd)  # a JSON array
    volumes = proxies()["proxy-a"]["volumes"]
    done = serve_check(on_this_machine(args, volumes), REQUIRED)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stdout.startswith("listen 0.0.0.0:8787; run log memory")


def test_the_image_is_slim_unprivileged_and_checks_its_own_health() -> None:
    text = dockerfile()
    assert text.count("\nFROM ") + text.startswith("FROM ") == 1 and "FROM python:3.12-slim" in text
    assert re.search(r"^USER streambridge$", text, re.MULTILINE) and "pip install ." in text
    port = tomllib.loads((DEPLOY / "routes.toml").read_text())["server"]["port"]
    assert f"EXPOSE {port}" in text and f"http://127.0.0.1:{port}/healthz" in text
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().split()
    copied = re.findall(r"^COPY (.*) \S+$", text, re.MULTILINE)
    for path in " ".join(copied).split():
        assert f"!{path}" in ignored or f"!{path}/" in ignored, path


def test_what_the_docs_quote_from_deploy_is_in_the_files() -> None:
    doc = (ROOT / "docs/deploy.md").read_text()
    quotes = re.findall(r"```\w*\n# from (deploy/\S+)\n(.*?)```", doc, re.DOTALL)
    assert quotes
    for path, text in quotes:
        assert text in (ROOT / path).read_text(), path
