"""Which of an upstream's own threads each client conversation is.

A server that mints its thread ids and takes no other (a surface whose ``threads`` are chosen by
the server: nest) cannot be sent a client's conversation id. The proxy sends a conversation's
first message without one, remembers the id the server answered with, keyed by (route, the
client's identity, the client's conversation id), and sends it with every later message. The map
lives beside the run log: in this process, or in Redis, so any instance continues a
conversation another one began. Entries live ``ttl`` seconds after their last use.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import TYPE_CHECKING, NamedTuple

from redis.exceptions import RedisError

from ..logging import log_event

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from .base import RunLog

__all__ = [
    "MAX_THREADS",
    "MemoryThreadMap",
    "RedisThreadMap",
    "ThreadKey",
    "ThreadMap",
    "ThreadMapUnavailable",
    "thread_map",
]

#: the most conversations the in-process map remembers (the least recently used leave first)
MAX_THREADS = 100_000
#: how long a request waits for Redis to say a conversation's thread
_REDIS_TIMEOUT = 1.0


class ThreadKey(NamedTuple):
    route: str
    owner: str  # the identity that sent the conversation (see runlog.identity): never shared
    conversation: str  # the client's conversation id

    def digest(self) -> str:
        """The key without the client's words in it (a Redis key name is visible to operators)."""
        return hashlib.sha256("\0".join(self).encode("utf-8", "surrogateescape")).hexdigest()[:40]


class ThreadMapUnavailable(Exception):
    """The map could not be read: sending the message would start the conversation over."""


class ThreadMap(ABC):
    @abstractmethod
    async def get(self, key: ThreadKey) -> str | None:
        """The upstream's thread of a conversation (its time to live renewed); None if new.
        Raises :class:`ThreadMapUnavailable` when that cannot be known."""

    @abstractmethod
    async def put(self, key: ThreadKey, thread: str) -> None:
        """Remember the upstream's thread of a conversation (best effort: never raises)."""


class MemoryThreadMap(ThreadMap):
    def __init__(self, ttl: float, limit: int = MAX_THREADS) -> None:
        self.ttl = ttl
        self.limit = limit
        self._entries: OrderedDict[ThreadKey, tuple[str, float]] = OrderedDict()

    async def get(self, key: ThreadKey) -> str | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        thread, expires = entry
        now = time.monotonic()
        if expires <= now:
            del self._entries[key]
            return None
        self._entries[key] = (thread, now + self.ttl)
        self._entries.move_to_end(key)
        return thread

    async def put(self, key: ThreadKey, thread: str) -> None:
        self._entries[key] = (thread, time.monotonic() + self.ttl)
        self._entries.move_to_end(key)
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)


class RedisThreadMap(ThreadMap):
    """One key per conversation, ``sb:thread:<digest>``, expiring ``ttl`` after its last use."""

    def __init__(self, redis: aioredis.Redis, ttl: float) -> None:
        self.redis = redis
        self.ttl_ms = max(1, int(ttl * 1000))

    @staticmethod
    def _name(key: ThreadKey) -> str:
        return "sb:thread:" + key.digest()

    async def get(self, key: ThreadKey) -> str | None:
        try:
            async with asyncio.timeout(_REDIS_TIMEOUT):
                value = await self.redis.getex(self._name(key), px=self.ttl_ms)
        except (RedisError, OSError, TimeoutError) as exc:
            raise ThreadMapUnavailable(type(exc).__name__) from None
        return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value

    async def put(self, key: ThreadKey, thread: str) -> None:
        try:
            async with asyncio.timeout(_REDIS_TIMEOUT):
                await self.redis.set(self._name(key), thread.encode("utf-8", "surrogateescape"), px=self.ttl_ms)
        except (RedisError, OSError, TimeoutError) as exc:
            log_event(logging.WARNING, "thread_map_write_failed", route=key.route, error=type(exc).__name__)


def thread_map(runlog: RunLog | None, ttl: float) -> ThreadMap:
    """The map beside the run log: in Redis when the run log is, else in this process (also
    with ``--run-log off``: a conversation with such an upstream needs it all the same)."""
    from .redis import RedisRunLog

    if isinstance(runlog, RedisRunLog):
        return RedisThreadMap(runlog.redis, ttl)
    return MemoryThreadMap(ttl)
