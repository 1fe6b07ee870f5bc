"""The run log on its own: cursors (numbering, resume filtering, independent of chunking), and
the two backends behind one interface (memory, and Redis Streams on a real redis-server):
frames after a cursor then live ones then the end, bounds and gaps, reaping a run whose owner
is gone, and the end fencing out its owner's late writes."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from streambridge.bridge.runlog import FINAL, Gap, Numbering, RunInfo, after_key, frames_after
from streambridge.bridge.runlog.memory import MemoryRunLog
from streambridge.bridge.runlog.redis import RedisRunLog

from .redis_support import RedisServer

FRAMES = [b'data: {"kind":"text","text":"%d"}\n\n' % i for i in range(40)]
META = b'event: meta\ndata: {"runId":"r"}\n\n'
DONE = b"event: done\ndata: {}\n\n"


def info(run_id: str = "run-1", framing: str = "sse", skip_named: bool = False, instance: str = "a") -> RunInfo:
    return RunInfo(
        run_id=run_id, route="default", owner="o", instance=instance, target="nest", framing=framing,
        skip_named=skip_named,
    )  # fmt: skip


def cuts(data: list[bytes], rng: random.Random) -> list[bytes]:
    """The frames grouped into writes at random boundaries."""
    writes, i = [], 0
    while i < len(data):
        n = rng.randint(1, 5)
        writes.append(b"".join(data[i : i + n]))
        i += n
    return writes


# -- cursors ---------------------------------------------------------------------------------


def test_sse_frames_are_numbered_from_one_and_each_write_knows_its_keys() -> None:
    numbering = Numbering("sse")
    data, lo, hi = numbering.number(FRAMES[0] + FRAMES[1])
    assert data == b"id: 1\n" + FRAMES[0] + b"id: 2\n" + FRAMES[1]
    assert (lo, hi) == (2, 4)
    data, lo, hi = numbering.number(FRAMES[2])
    assert data == b"id: 3\n" + FRAMES[2] and (lo, hi) == (6, 6)


def test_named_frames_stay_unnumbered_where_the_protocol_says_so_and_own_ids_are_kept() -> None:
    numbering = Numbering("sse", skip_named=True)
    data, lo, hi = numbering.number(b"id: 7\n" + FRAMES[0] + FRAMES[1] + DONE)
    assert data == b"id: 7\n" + FRAMES[0] + b"id: 8\n" + FRAMES[1] + DONE
    assert (lo, hi) == (14, 17)  # the done: after id 8, before id 9


@pytest.mark.parametrize("seed", range(20))
def test_numbering_and_resuming_do_not_depend_on_how_writes_were_cut(seed: int) -> None:
    rng = random.Random(seed)
    frames = [*FRAMES, DONE]
    whole, _, _ = Numbering("sse", skip_named=True).number(b"".join(frames))
    numbering = Numbering("sse", skip_named=True)
    logged = [numbering.number(w) for w in cuts(frames, rng)]
    assert b"".join(d for d, _, _ in logged) == whole
    cursor = rng.randint(0, len(FRAMES))
    rest = b"".join(frames_after(d, lo, hi, after_key(str(cursor)), "sse") for d, lo, hi in logged)
    assert rest == b"".join(b"id: %d\n%s" % (i + 1, f) for i, f in enumerate(FRAMES) if i + 1 > cursor) + DONE


def test_ndjson_lines_are_counted_not_rewritten() -> None:
    numbering = Numbering("ndjson")
    data, lo, hi = numbering.number(b'{"a":1}\n{"a":2}\n')
    assert data == b'{"a":1}\n{"a":2}\n' and (lo, hi) == (2, 4)
    assert frames_after(data, lo, hi, after_key("1"), "ndjson") == b'{"a":2}\n'


@pytest.mark.parametrize("cursor", ["-1", "1.5", "x", "9" * 40])
def test_a_cursor_that_is_not_a_count_is_refused(cursor: str) -> None:
    with pytest.raises(ValueError):
        after_key(cursor)


# -- both backends -----------------------------------------------------------------------------


@pytest.fixture(params=["memory", "redis"])
async def runlog(request: pytest.FixtureRequest) -> AsyncIterator[MemoryRunLog | RedisRunLog]:
    if request.param == "memory":
        log: MemoryRunLog | RedisRunLog = MemoryRunLog("a", run_bytes=1 << 20, total_bytes=1 << 24, ttl=60)
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        log = RedisRunLog("a", server.url, ttl=60, lease=0.5, maxlen=10_000)
    cancelled: list[str] = []
    await log.start(lambda run_id: cancelled.append(run_id) is None)
    try:
        yield log
    finally:
        await log.stop()


async def read_all(log: MemoryRunLog | RedisRunLog, run: RunInfo, after: int) -> bytes:
    async with asyncio.timeout(20):
        return b"".join([data async for data in log.read(run, after)])


async def test_a_reader_gets_the_frames_after_its_cursor_then_live_ones_then_the_end(runlog) -> None:
    run = info()
    writer = await runlog.begin(run)
    sent = [writer.append(f) for f in FRAMES[:10]]
    reader = asyncio.create_task(read_all(runlog, run, after_key("4")))
    for frame in FRAMES[10:]:
        sent.append(writer.append(frame))
    sent.append(writer.append(DONE))
    writer.finish()
    assert await reader == b"".join(sent[4:])
    assert await read_all(runlog, run, after_key("40")) == sent[-1]  # joins after the end: the end
    found = await runlog.lookup("run-1")
    assert found is not None and found.finished and found.owner == "o"
    assert await runlog.lookup("nobody") is None


async def test_a_reader_that_joins_before_anything_is_written_waits_for_it(runlog) -> None:
    run = info(framing="ndjson")
    writer = await runlog.begin(run)
    reader = asyncio.create_task(read_all(runlog, run, 0))
    lines = [writer.append(b'{"n":%d}\n' % i) for i in range(5)]
    writer.finish()
    assert await reader == b"".join(lines)


async def test_the_latest_run_of_a_chat_is_found_by_its_chat_id(runlog) -> None:
    (await runlog.begin(RunInfo("r1", "default", "o", "a", "ai-sdk", "sse", chat_id="chat-1"))).finish()
    await runlog.begin(RunInfo("r2", "default", "o", "a", "ai-sdk", "sse", chat_id="chat-1"))
    assert await runlog.chat_run("default", "chat-1") == "r2"
    assert await runlog.chat_run("default", "chat-2") is None


async def test_the_memory_log_trims_a_run_past_its_bound_and_a_resume_before_that_is_a_gap() -> None:
    log = MemoryRunLog("a", run_bytes=200, total_bytes=1 << 20, ttl=60)
    run = info()
    writer = await log.begin(run)
    for frame in FRAMES:
        writer.append(frame)
    writer.finish()
    with pytest.raises(Gap):
        await log.check(run, 0)
    await log.check(run, after_key("39"))
    assert await read_all(log, run, after_key("38")) == b"id: 39\n" + FRAMES[38] + b"id: 40\n" + FRAMES[39]


async def test_the_memory_log_evicts_the_oldest_finished_runs_first() -> None:
    log = MemoryRunLog("a", run_bytes=1 << 20, total_bytes=3000, ttl=60)
    old, live = await log.begin(info("old")), await log.begin(info("live"))
    for frame in FRAMES[:20]:
        old.append(frame)
        live.append(frame)
    old.finish()
    newer = await log.begin(info("newer"))
    for frame in FRAMES:
        newer.append(frame)
    assert await log.lookup("old") is None
    assert await log.lookup("live") is not None and await log.lookup("newer") is not None
    assert log.total <= 3000


async def test_the_memory_log_forgets_finished_runs_after_their_ttl() -> None:
    log = MemoryRunLog("a", run_bytes=1 << 20, total_bytes=1 << 20, ttl=0.0)
    (await log.begin(info("gone"))).finish()
    assert await log.lookup("gone") is None


# -- Redis only ------------------------------------------------------------------------------


@pytest.mark.parametrize("flushed", [True, False], ids=["after-its-frames-reached-redis", "before-any-did"])
async def test_a_redis_run_whose_owner_is_gone_is_ended_by_a_reader_once_its_lease_lapses(
    redis_server, flushed: bool
) -> None:
    owner = RedisRunLog("a", redis_server.url, ttl=60, lease=0.3, maxlen=1000)
    reader_side = RedisRunLog("b", redis_server.url, ttl=60, lease=0.3, maxlen=1000)
    await owner.start(lambda run_id: False)
    await reader_side.start(lambda run_id: False)
    try:
        run = info(instance="a")
        writer = await owner.begin(run)
        sent = b"".join(writer.append(f) for f in FRAMES[:5])
        if flushed:
            await owner._flush()
        else:  # (its frames were still waiting for the next batch)
            owner._ops.clear()
            sent = b""
        for task in owner._tasks:  # the owner dies: no more writes, no lease renewed
            task.cancel()
        body = await read_all(reader_side, run, 0)
        assert body.startswith(sent)
        end = body[len(sent) :]
        assert b'event: error\ndata: {"code":"run_lost"' in end and end.endswith(b"\n\n")
        # the owner's late writes are refused: the end is the end
        writer.append(FRAMES[5])
        await owner._flush()
        assert writer.broken
        assert await read_all(reader_side, run, 0) == body
    finally:
        await owner.stop()
        await reader_side.stop()


async def test_redis_trimming_makes_a_resume_from_before_it_a_gap(redis_server) -> None:
    log = RedisRunLog("a", redis_server.url, ttl=60, lease=1, maxlen=1)
    await log.start(lambda run_id: False)
    try:
        run = info()
        writer = await log.begin(run)
        for i in range(250):  # (MAXLEN ~ trims whole nodes of 100 entries)
            writer.append(FRAMES[i % 40])
            await log._flush()  # one entry per write
        writer.finish()
        await log._flush()
        with pytest.raises(Gap):
            await log.check(run, 0)
        assert after_key("9" * 16) < FINAL
    finally:
        await log.stop()


def test_numbering_is_the_same_past_the_ids_whose_lines_are_made_once() -> None:
    frames = [b'data: {"n":%d}\n\n' % i for i in range(70_000)]
    numbering, rng, written, i = Numbering("sse"), random.Random(7), [], 0
    while i < len(frames):
        n = rng.randint(1, 300)
        written.append(numbering.number(b"".join(frames[i : i + n]))[0])
        i += n
    assert b"".join(written) == b"".join(b"id: %d\n%s" % (n + 1, f) for n, f in enumerate(frames))
