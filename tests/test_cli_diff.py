"""``streambridge diff``: semantic comparison, within and across protocols."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_support import CAPTURES, GOLDEN, invoke, translated, user_error
from .corpus import FILES


def test_a_file_equals_itself() -> None:
    result = invoke("diff", GOLDEN / "approval/nest.sse", GOLDEN / "approval/nest.sse")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "no differences"


@pytest.mark.parametrize("target", sorted(FILES))
@pytest.mark.parametrize("source", sorted(FILES))
def test_a_translation_says_the_same_as_its_source(tmp_path: Path, source: str, target: str) -> None:
    for scenario in ("approval", "tool-denied", "interleaved-messages", "unknown-kinds", "truncated"):
        original = GOLDEN / scenario / FILES[source]
        out = tmp_path / f"{scenario}.{target}"
        out.write_bytes(translated(source, target, original.read_bytes()))
        result = invoke("diff", original, out)
        assert result.exit_code == 0, (scenario, result.stdout)


def test_chunking_and_generated_ids_are_not_differences() -> None:
    # oma says the turn as one text event, nest as three deltas; run ids differ.
    result = invoke("diff", GOLDEN / "plain-text/oma.ndjson", GOLDEN / "plain-text/nest.sse")
    assert result.exit_code == 0, result.stdout
    assert "compared: what both say natively" in result.stdout


def test_call_ids_are_compared_by_position_unless_exact_ids(tmp_path: Path) -> None:
    original = GOLDEN / "two-tools-one-step/nest.sse"
    renamed = tmp_path / "renamed.sse"
    data = original.read_bytes()
    ids = sorted({part.split(b'"')[0] for part in data.split(b'"id":"')[1:]})
    for i, call_id in enumerate(ids):
        data = data.replace(call_id, f"other-{i}".encode())
    renamed.write_bytes(data)
    assert invoke("diff", original, renamed).exit_code == 0
    exact = invoke("diff", original, renamed, "--exact-ids")
    assert exact.exit_code == 1
    assert "other-0" in exact.stdout


def test_a_real_difference_is_shown_with_frames_and_exit_1() -> None:
    result = invoke("diff", GOLDEN / "cancelled/agentkit.sse", GOLDEN / "cancelled/nest.sse")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "@@ event 3 of A (frame 5), event 3 of B (frame 7): replace" in lines
    assert any(line.startswith("- A frame 5: terminal") and "Stopped by user." in line for line in lines)
    assert any(line.startswith("+ B frame 7: terminal") and "The run was cancelled." in line for line in lines)
    assert lines[-1] == "1 difference(s)"


def test_unknown_kinds_count_across_protocols() -> None:
    result = invoke("diff", GOLDEN / "unknown-kinds/agentkit.sse", GOLDEN / "unknown-kinds/nest.sse")
    assert result.exit_code == 1
    assert "'handoff'" not in result.stdout and '"name":"handoff"' in result.stdout


def test_max_limits_the_differences_shown(tmp_path: Path) -> None:
    original = GOLDEN / "approval/nest.sse"
    edited = tmp_path / "edited.sse"
    edited.write_bytes(original.read_bytes().replace(b"damaged", b"broken").replace(b"business days", b"days"))
    assert invoke("diff", original, edited).stdout.count("@@") >= 2
    result = invoke("diff", original, edited, "--max", "1")
    assert result.exit_code == 1
    assert sum(line.startswith("@@") for line in result.stdout.splitlines()) == 1
    assert "more difference(s)" in result.stdout


def test_a_truncated_stream_differs_from_a_complete_one() -> None:
    result = invoke("diff", GOLDEN / "truncated/oma.ndjson", CAPTURES / "01-chat-read-only.http")
    assert result.exit_code == 1
    assert '"code":"truncated"' in result.stdout


def test_diff_bad_inputs_are_user_errors(tmp_path: Path) -> None:
    good = GOLDEN / "plain-text/nest.sse"
    user_error(invoke("diff", good, tmp_path / "none.sse"), "none.sse")
    user_error(invoke("diff", GOLDEN / "plain-text/README.md", good), "README.md", "--protocol-a")
    user_error(invoke("diff", good, GOLDEN / "plain-text/README.md"), "--protocol-b")
    user_error(invoke("diff", good, good, "--protocol-a", "bad"), "--protocol-a", "'bad'")
