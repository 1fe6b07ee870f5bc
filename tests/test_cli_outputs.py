"""``convert -o``: what is not a regular file is written into, never replaced (issue 29)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

from .cli_support import GOLDEN, env, invoke, translated

SOURCE = GOLDEN / "plain-text" / "nest.sse"


def _expected() -> bytes:
    return translated("nest", "oma", SOURCE.read_bytes())


def test_a_fifo_is_written_into_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as reader:
            received.append(reader.read())

    reader = threading.Thread(target=read)
    reader.start()
    result = invoke("convert", SOURCE, "--to", "oma", "-o", fifo)
    reader.join(60)
    assert result.exit_code == 0, result.stderr
    assert received == [_expected()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]  # no .part left beside it


def test_a_symlink_stays_a_symlink_and_its_target_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "real.ndjson"
    target.write_bytes(b"old\n")
    link = tmp_path / "link.ndjson"
    link.symlink_to(target.name)
    result = invoke("convert", SOURCE, "--to", "oma", "-o", link)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_bytes() == _expected()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.ndjson", "real.ndjson"]


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.ndjson"
    link.symlink_to("new.ndjson")
    result = invoke("convert", SOURCE, "--to", "oma", "-o", link)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink()
    assert (tmp_path / "new.ndjson").read_bytes() == _expected()


def _run(*args: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "streambridge", *map(str, args)],
        env=env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_a_private_null_device_stays_a_character_device(tmp_path: Path) -> None:
    """/dev/null's test, first on a node of our own: a regression (run as root, which may make
    device nodes and replace /dev/null) fails here, not by destroying the system's."""
    _private_null_survives(tmp_path)


def _private_null_survives(tmp_path: Path) -> None:
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        return  # not root: the system's /dev/null cannot be replaced either
    done = _run("convert", SOURCE, "--to", "oma", "-o", node)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_dev_null_is_written_into_and_stays_a_character_device(tmp_path: Path) -> None:
    _private_null_survives(tmp_path)
    done = _run("convert", SOURCE, "--to", "oma", "-o", os.devnull)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert done.stdout == b""


def test_dev_stdout_goes_to_stdout(tmp_path: Path) -> None:
    own = tmp_path / "stdout"  # first a link of our own, as /dev/stdout is: a regression fails here
    own.symlink_to("/proc/self/fd/1")
    done = _run("convert", SOURCE, "--to", "oma", "-o", own)
    assert done.returncode == 0, done.stderr
    assert done.stdout == _expected() and own.is_symlink()
    done = _run("convert", SOURCE, "--to", "oma", "-o", "/dev/stdout")
    assert done.returncode == 0, done.stderr
    assert done.stdout == _expected()
    assert os.path.islink("/dev/stdout")


def convert_to_dev_stdout(stdout: object) -> subprocess.CompletedProcess[bytes]:
    """``convert -o /dev/stdout`` with the command's standard output on ``stdout`` (a file)."""
    return subprocess.run(
        [sys.executable, "-m", "streambridge", "convert", SOURCE, "--to", "oma", "-o", "/dev/stdout"],
        env=env(),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=60,
        check=False,
    )


def test_dev_stdout_redirected_to_a_file_fills_that_file(tmp_path: Path) -> None:
    out = tmp_path / "out.ndjson"
    with open(out, "wb") as file:
        done = convert_to_dev_stdout(file)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == _expected()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.ndjson"]


def test_dev_stdout_appended_to_a_file_keeps_what_was_there(tmp_path: Path) -> None:
    out = tmp_path / "log.ndjson"
    out.write_bytes(b"before\n")
    with open(out, "ab") as file:
        done = convert_to_dev_stdout(file)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == b"before\n" + _expected()
