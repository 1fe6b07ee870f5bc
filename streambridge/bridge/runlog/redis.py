"""The run log on Redis Streams, shared by every proxy instance.

One stream per run, ``sb:{<run>}:log``. The owner appends each write as an entry with an explicit
id ``0-<n>`` (fields ``c``: the bytes, ``k``: lowest key, highest key, and the highest key of the
entry before), in one pipeline per batch (``XADD … MAXLEN ~``, then a sliding ``PEXPIRE`` of the
run's keys). Its end is the entry ``1-0`` (``e``): nothing the owner writes after it is accepted,
so whoever writes the end first wins, and an owner that lost its lease cannot add to a run that a
reaper ended. Readers ``XREAD BLOCK`` from the last id they read (never ``$``). While it runs the
owner renews ``sb:{<run>}:lease``; a reader that finds the lease lapsed and no end writes the
end itself, a ``run_lost`` terminal, so no reader hangs. A cancel goes to the owner on its
instance's channel ``sb:cancel:<instance>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.typing import EncodableT, FieldT

from ..logging import log_event
from .base import Gap, RunInfo, RunLog, RunWriter, closing_terminal
from .cursor import FINAL, frames_after

__all__ = ["RedisRunLog"]

_END_ID = b"1-0"
_Fields = dict[FieldT, EncodableT]
#: how long the writer waits after a write for more to join its pipeline (the log may lag its
#: clients by this much; a client never waits for the log)
_LINGER = 0.002
_ENCODE = msgspec.json.Encoder()
_DECODE_INFO = msgspec.json.Decoder(RunInfo)


def _keys(run_id: str) -> tuple[str, str, str, str]:
    """The run's log, info, lease and readers keys (one hash slot: ``{run}``)."""
    base = "sb:{" + run_id + "}:"
    return base + "log", base + "info", base + "lease", base + "readers"


class _Writer(RunWriter):
    def __init__(self, log: RedisRunLog, info: RunInfo) -> None:
        super().__init__(info)
        self.log = log
        self.keys = _keys(info.run_id)
        self.chat_key = f"sb:chat:{info.route}:{info.chat_id}" if info.chat_id else ""
        self.seq = 0
        self.prev_hi = 0
        self.broken = False  # a write failed: the rest of the run is not logged
        self.finished = False
        self.expiry_moved = float("-inf")  # when the run's keys' TTL was last moved on
        self.queued = 0  # entries given to the log and not yet written (or failed)
        self._ended = asyncio.Event()

    def _store(self, lo: int, hi: int, data: bytes) -> None:
        if self.broken:
            return
        self.seq += 1
        fields: _Fields = {b"c": data, b"k": b"%d %d %d" % (lo, hi, self.prev_hi)}
        self.prev_hi = hi
        self.log.enqueue(self, b"0-%d" % self.seq, fields)

    async def room(self) -> bool:
        """A run whose client is gone waits until its entries are written; False once they
        could not be (its log has holes: no one can resume it)."""
        while self.queued and not self.broken:
            await self.log.flushed()
        return not self.broken

    async def ended(self) -> None:
        with contextlib.suppress(TimeoutError):  # (a log that cannot be written is not waited for)
            async with asyncio.timeout(self.log.lease):
                await self._ended.wait()

    def finish(self) -> None:
        self.finished = True
        if self.broken and not self.log.reachable():
            self._ended.set()
            return
        if self.broken:  # end what readers there are (a log that survived a blip) as lost
            data = closing_terminal(self.info, "run_log_unavailable")
            fields: _Fields = {b"c": data, b"k": b"%d %d %d" % (FINAL, FINAL, self.prev_hi), b"e": b"1"}
            self.log.enqueue(self, _END_ID, fields, lost=True)
            return
        self.log.enqueue(self, _END_ID, {b"e": b"1"})


class RedisRunLog(RunLog):
    """``ttl``: seconds a run's keys live after its last write; ``lease``: seconds an owner's
    lease lasts unrenewed; ``maxlen``: entries kept per run (approximately); ``timeout``:
    seconds a command may take (a hung Redis then fails as one that is down, so a new chat is
    held up about that long, not for minutes), except the blocking reads and the cancel
    channel, which wait longer by design (a client of their own)."""

    def __init__(self, instance: str, url: str, *, ttl: float, lease: float, maxlen: int, timeout: float = 1.0) -> None:
        super().__init__(instance)
        self.ttl_ms = max(1, int(ttl * 1000))
        self.lease = lease
        self.lease_ms = max(1, int(lease * 1000))
        self.maxlen = maxlen
        # a dropped connection is tried again once; a command that timed out is not
        retry = Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))
        self.redis = aioredis.Redis.from_url(
            url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=retry, health_check_interval=0
        )
        self.blocking = aioredis.Redis.from_url(
            url,
            socket_timeout=lease + 5,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1),
            health_check_interval=0,
        )
        self.channel = f"sb:cancel:{instance}"
        self._ops: list[tuple[_Writer, bytes, _Fields, bool]] = []
        self._wake = asyncio.Event()
        self._batch = asyncio.Event()  # set (and replaced) when a batch was written or failed
        self._live: set[_Writer] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._failed = False
        self._closing = False

    # -- the owner's side ----------------------------------------------------------------------

    async def start(self, on_cancel: Callable[[str], bool]) -> None:
        await super().start(on_cancel)
        self._tasks = [
            asyncio.create_task(self._flusher()),
            asyncio.create_task(self._renew_leases()),
            asyncio.create_task(self._listen()),
        ]

    async def stop(self) -> None:
        """Write what is queued, then stop (redis-py may swallow a task's cancellation inside a
        command, so the loops end on ``_closing`` too, and are waited for a bounded time)."""
        self._closing = True
        self._wake.set()
        for task in self._tasks[1:]:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=self.lease + 5)
        with contextlib.suppress(RedisError, OSError):
            await self.redis.aclose()
        with contextlib.suppress(RedisError, OSError):
            await self.blocking.aclose()

    async def begin(self, info: RunInfo) -> RunWriter:
        writer = _Writer(self, info)
        _, info_key, lease_key, _ = writer.keys
        pipe = self.redis.pipeline(transaction=False)
        pipe.set(info_key, _ENCODE.encode(info), px=self.ttl_ms)
        pipe.set(lease_key, self.instance, px=self.lease_ms)
        if writer.chat_key:
            pipe.set(writer.chat_key, info.run_id, px=self.ttl_ms)
        try:
            await pipe.execute()
        except (RedisError, OSError) as exc:  # the run goes on, unlogged
            writer.broken = True
            log_event(logging.WARNING, "run_log_write_failed", runs=1, error=type(exc).__name__, fenced=False)
            return writer
        self._live.add(writer)
        return writer

    def enqueue(self, writer: _Writer, entry_id: bytes, fields: _Fields, lost: bool = False) -> None:
        self._ops.append((writer, entry_id, fields, lost))
        writer.queued += 1
        self._wake.set()

    async def flushed(self) -> None:
        """Return once the next batch was written (or failed)."""
        await self._batch.wait()

    async def _flusher(self) -> None:
        while not self._closing:
            await self._wake.wait()
            await asyncio.sleep(_LINGER)  # let the writes of the next moment join the batch
            self._wake.clear()
            await self._flush()
        if self._ops:
            await self._flush()

    async def _flush(self) -> None:
        """One pipeline for everything queued: each run's entries, then its keys' expiry."""
        ops, self._ops = self._ops, []
        pipe = self.redis.pipeline(transaction=False)
        writers: dict[_Writer, None] = {}
        ending = [writer for writer, entry_id, _, _ in ops if entry_id == _END_ID]
        for writer, entry_id, fields, lost in ops:
            log_key, _, lease_key, _ = writer.keys
            pipe.xadd(
                log_key,
                fields,
                id=entry_id,
                maxlen=self.maxlen,
                approximate=True,
                nomkstream=lost,
            )
            if entry_id == _END_ID:
                pipe.delete(lease_key)
            writers[writer] = None
        now = asyncio.get_running_loop().time()
        for writer in writers:  # the sliding TTL, moved on at most every few seconds per run
            if now - writer.expiry_moved < self.ttl_ms / 4000 and not writer.finished:
                continue
            writer.expiry_moved = now
            log_key, info_key, _, _ = writer.keys
            pipe.pexpire(log_key, self.ttl_ms)
            pipe.pexpire(info_key, self.ttl_ms)
            if writer.chat_key:
                pipe.pexpire(writer.chat_key, self.ttl_ms)
        try:
            results = await pipe.execute(raise_on_error=False)
        except (RedisError, OSError) as exc:
            results = [exc]
        self._settle(writers, ending, results)
        for writer, _, _, _ in ops:
            writer.queued -= 1
        batch, self._batch = self._batch, asyncio.Event()
        batch.set()

    def reachable(self) -> bool:
        return not self._failed

    def _settle(self, writers: dict[_Writer, None], ending: list[_Writer], results: list[Any]) -> None:
        failed = [r for r in results if isinstance(r, Exception)]
        for writer in ending:  # (written, or not writable: no one waits for it longer)
            self._live.discard(writer)
            writer._ended.set()
        if not failed:
            self._failed = False
            return
        fenced = all(isinstance(r, ResponseError) for r in failed)
        for writer in writers:  # (a batch that failed in part: its runs' logs have holes)
            writer.broken = True
            self._live.discard(writer)
        if not self._failed:
            log_event(
                logging.WARNING,
                "run_log_write_failed",
                runs=len(writers),
                error=type(failed[0]).__name__,
                fenced=fenced,
            )
        self._failed = True

    async def _renew_leases(self) -> None:
        while not self._closing:
            await asyncio.sleep(self.lease / 3)
            live = [w for w in self._live if not w.finished and not w.broken]
            if not live:
                continue
            pipe = self.redis.pipeline(transaction=False)
            for writer in live:
                pipe.set(writer.keys[2], self.instance, px=self.lease_ms)
            with contextlib.suppress(RedisError, OSError):
                await pipe.execute()

    async def _listen(self) -> None:
        """Cancels for runs this instance owns, sent by any instance (resubscribed after a loss)."""
        while not self._closing:
            pubsub = self.blocking.pubsub()
            try:
                await pubsub.subscribe(self.channel)
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        self.on_cancel(bytes(message["data"]).decode("utf-8", "replace"))
            except (RedisError, OSError):
                await asyncio.sleep(self.lease / 3)  # Redis is away: try again
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()

    # -- everyone's side -----------------------------------------------------------------------

    async def lookup(self, run_id: str) -> RunInfo | None:
        log_key, info_key, _, _ = _keys(run_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.get(info_key)
        pipe.xrevrange(log_key, count=1)
        try:
            raw, last = await pipe.execute()
        except (RedisError, OSError):
            return None
        if raw is None:
            return None
        info = _DECODE_INFO.decode(raw)
        if last and last[0][0] == _END_ID:
            info = msgspec.structs.replace(info, finished=True)
        return info

    async def chat_run(self, route: str, chat_id: str) -> str | None:
        with contextlib.suppress(RedisError, OSError):
            value = await self.redis.get(f"sb:chat:{route}:{chat_id}")
            return value.decode() if isinstance(value, bytes) else value
        return None

    async def check(self, info: RunInfo, after: int) -> None:
        try:
            first = await self.redis.xrange(_keys(info.run_id)[0], count=1)
        except (RedisError, OSError):
            raise Gap from None
        if first and _gap(first[0], after):
            raise Gap

    async def has_readers(self, run_id: str) -> bool:
        with contextlib.suppress(RedisError, OSError):
            return bool(await self.redis.exists(_keys(run_id)[3]))
        return False

    async def cancel(self, info: RunInfo) -> bool:
        if info.instance == self.instance:
            return self.on_cancel(info.run_id)
        with contextlib.suppress(RedisError, OSError):
            return bool(await self.redis.publish(f"sb:cancel:{info.instance}", info.run_id))
        return False

    async def read(self, info: RunInfo, after: int) -> AsyncIterator[bytes]:
        log_key, _, _, readers_key = _keys(info.run_id)
        last = b"0-0"
        framing = info.framing
        while True:
            pipe = self.blocking.pipeline(transaction=False)
            pipe.set(readers_key, b"1", px=2 * self.lease_ms)
            pipe.xread({log_key: last}, count=512, block=self.lease_ms)
            try:
                _, found = await pipe.execute()
            except (RedisError, OSError):
                yield closing_terminal(info, "run_log_unavailable")
                return
            if not found:
                ended = await self._ended_or_reaped(info)
                if ended is not None:
                    if ended:
                        yield ended
                    return
                continue
            parts: list[bytes] = []
            for entry_id, fields in found[0][1]:
                if last == b"0-0" and _gap((entry_id, fields), after):
                    raise Gap
                last = entry_id
                data = fields.get(b"c")
                if data:
                    lo, hi, _ = map(int, fields[b"k"].split())
                    parts.append(frames_after(data, lo, hi, after, framing))
                if b"e" in fields:
                    yield b"".join(parts)
                    return
            data = b"".join(parts)
            if data:
                yield data

    async def _ended_or_reaped(self, info: RunInfo) -> bytes | None:
        """Nothing new for a lease: None while the owner holds its lease; else end the run for
        it (the entry is read next, b"" then) or, when its log is gone, the terminal to end with."""
        log_key, info_key, lease_key, _ = _keys(info.run_id)
        pipe = self.redis.pipeline(transaction=False)
        pipe.exists(lease_key)
        pipe.exists(info_key)
        pipe.xrevrange(log_key, count=1)
        try:
            leased, known, last = await pipe.execute()
        except (RedisError, OSError):
            return closing_terminal(info, "run_log_unavailable")
        if not known:
            return closing_terminal(info, "run_log_unavailable")  # expired, or Redis lost it
        if leased:
            return None
        # (no entry yet: the owner died before its first batch reached Redis; its run is lost all the same)
        prev_hi = int(last[0][1].get(b"k", b"0 0 0").split()[1]) if last else 0
        fields: _Fields = {
            b"c": closing_terminal(info, "run_lost"),
            b"k": b"%d %d %d" % (FINAL, FINAL, prev_hi),
            b"e": b"1",
        }
        pipe = self.redis.pipeline(transaction=False)
        pipe.xadd(log_key, fields, id=_END_ID)
        pipe.pexpire(log_key, self.ttl_ms)
        try:
            ended, _ = await pipe.execute(raise_on_error=False)
        except (RedisError, OSError):
            return closing_terminal(info, "run_log_unavailable")
        if not isinstance(ended, ResponseError):  # (else the owner, or another reader, ended it first)
            log_event(logging.WARNING, "run_reaped", run=info.run_id, owner=info.instance)
        return None


def _gap(entry: Any, after: int) -> bool:
    """Whether the log's first entry shows that what follows ``after`` was trimmed from it."""
    entry_id, fields = entry
    if entry_id in (b"0-1", _END_ID) or b"k" not in fields:
        return False
    return after < int(fields[b"k"].split()[2])
