"""Rate limits shared by every client of an endpoint: token buckets for requests per
minute and tokens per minute.

Each limiter keeps, per key (an endpoint's host and model), two buckets that refill
continuously: ``rpm`` requests and ``tpm`` tokens a minute, each holding at most a
minute's worth. :meth:`Limiter.reserve` either takes one request and ``tokens`` tokens
at once and answers 0, or takes nothing and answers how long to wait. Three stores,
one interface:

* :class:`MemoryLimiter`: one process (threads and tasks);
* :class:`FileLimiter`: every process on one machine, through a state file under an
  exclusive ``fcntl`` lock (the embedded default);
* :class:`RedisLimiter`: every worker of a deployment, through one Lua script that
  Redis runs atomically.

Slots (:class:`Slots`) bound how many workers serve one key at once (an endpoint, or
a researcher's endpoints): :meth:`Slots.take` holds one of ``limit`` slots for ``ttl``
seconds (renewed while the holder works, so a killed holder's slot frees itself), in
the same three stores.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import redis


@runtime_checkable
class Limiter(Protocol):
    def reserve(self, key: str, rpm: int | None, tpm: int | None, tokens: int) -> float:
        """Take one request and ``tokens`` tokens from ``key``'s buckets and return 0.0,
        or take nothing and return the seconds to wait before asking again."""
        ...


@dataclass
class Buckets:
    """Requests and tokens left, as of ``stamp`` (seconds)."""

    requests: float
    tokens: float
    stamp: float


def take(
    state: Buckets | None, now: float, rpm: int | None, tpm: int | None, tokens: int
) -> tuple[Buckets, float]:
    """The token-bucket step shared by the memory and file limiters: the new state and
    the wait (0: taken). A request needing more tokens than a minute's worth waits for
    a full bucket and then takes it all, so it is slow but never refused."""
    big = float("inf")
    cap_r = float(rpm) if rpm else big
    cap_t = float(tpm) if tpm else big
    if state is None:
        state = Buckets(cap_r, cap_t, now)
    elapsed = max(0.0, now - state.stamp)
    r = min(cap_r, state.requests + elapsed * (cap_r / 60.0)) if rpm else big
    t = min(cap_t, state.tokens + elapsed * (cap_t / 60.0)) if tpm else big
    need = min(float(tokens), cap_t)
    if r >= 1.0 and t >= need:
        return Buckets(r - 1.0 if rpm else big, t - need if tpm else big, now), 0.0
    wait_r = (1.0 - r) / (cap_r / 60.0) if rpm and r < 1.0 else 0.0
    wait_t = (need - t) / (cap_t / 60.0) if tpm and t < need else 0.0
    return Buckets(r, t, now), max(wait_r, wait_t, 0.001)


class MemoryLimiter:
    """Buckets in this process's memory."""

    def __init__(self) -> None:
        self._state: dict[str, Buckets] = {}
        self._lock = threading.Lock()

    def reserve(self, key: str, rpm: int | None, tpm: int | None, tokens: int) -> float:
        if not rpm and not tpm:
            return 0.0
        with self._lock:
            state, wait = take(self._state.get(key), time.time(), rpm, tpm, tokens)
            self._state[key] = state
        return wait


class FileLimiter:
    """Buckets in a JSON file shared by every process on the machine; each step holds an
    exclusive ``fcntl`` lock on the file, so processes never both take the last token."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def reserve(self, key: str, rpm: int | None, tpm: int | None, tokens: int) -> float:
        if not rpm and not tpm:
            return 0.0
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "r+", encoding="utf-8") as fh:
                raw = fh.read()
                try:
                    data: dict[str, Any] = json.loads(raw) if raw.strip() else {}
                except json.JSONDecodeError:
                    data = {}  # a torn file (a crash mid-write) starts the buckets afresh
                found = data.get(key)
                old = Buckets(*found) if isinstance(found, list) and len(found) == 3 else None
                state, wait = take(old, time.time(), rpm, tpm, tokens)
                data[key] = [_finite(state.requests), _finite(state.tokens), state.stamp]
                fh.seek(0)
                fh.truncate()
                fh.write(json.dumps(data))
                fh.flush()
        finally:
            os.close(fd)  # closing the descriptor releases the lock
        return wait


def _finite(value: float) -> float:
    return value if value != float("inf") else 1e300


# KEYS[1]: the bucket's hash; ARGV: rpm, tpm (0: no limit), tokens. Redis's own clock,
# so workers on different machines agree on the time.
_LUA = """
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local need = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'r', 't', 's')
local r = tonumber(state[1]) or rpm
local k = tonumber(state[2]) or tpm
local s = tonumber(state[3]) or now
local elapsed = math.max(0, now - s)
if rpm > 0 then r = math.min(rpm, r + elapsed * rpm / 60) end
if tpm > 0 then
  k = math.min(tpm, k + elapsed * tpm / 60)
  need = math.min(need, tpm)
end
local ok_r = (rpm == 0) or (r >= 1)
local ok_t = (tpm == 0) or (k >= need)
local wait = 0
if ok_r and ok_t then
  if rpm > 0 then r = r - 1 end
  if tpm > 0 then k = k - need end
else
  if not ok_r then wait = math.max(wait, (1 - r) * 60 / rpm) end
  if not ok_t then wait = math.max(wait, (need - k) * 60 / tpm) end
  wait = math.max(wait, 0.001)
end
redis.call('HSET', KEYS[1], 'r', tostring(r), 't', tostring(k), 's', tostring(now))
redis.call('EXPIRE', KEYS[1], 120)
return tostring(wait)
"""


class RedisLimiter:
    """Buckets in Redis, stepped by one Lua script (atomic on the server)."""

    def __init__(self, client: Any, prefix: str = "concordia:limits:") -> None:
        self.client = client
        self.prefix = prefix
        self._script = client.register_script(_LUA)

    @classmethod
    def from_url(cls, url: str, prefix: str = "concordia:limits:") -> RedisLimiter:
        return cls(redis.Redis.from_url(url), prefix)

    def reserve(self, key: str, rpm: int | None, tpm: int | None, tokens: int) -> float:
        if not rpm and not tpm:
            return 0.0
        answer = self._script(keys=[self.prefix + key], args=[rpm or 0, tpm or 0, tokens])
        return float(answer.decode() if isinstance(answer, bytes) else answer)


async def acquire(
    limiter: Limiter, key: str, rpm: int | None, tpm: int | None, tokens: int
) -> float:
    """Wait until ``limiter`` grants one request of ``tokens`` tokens; the seconds waited."""
    if not rpm and not tpm:
        return 0.0
    waited = 0.0
    while True:
        wait = await asyncio.to_thread(limiter.reserve, key, rpm, tpm, tokens)
        if wait <= 0:
            return waited
        await asyncio.sleep(wait)
        waited += wait


# -- slots: at most ``limit`` holders of a key at once ----------------------------------


@runtime_checkable
class Slots(Protocol):
    def take(self, key: str, limit: int, ttl: float) -> str | None:
        """Hold one of ``key``'s ``limit`` slots for ``ttl`` seconds: its token, or None
        when every slot is held."""
        ...

    def renew(self, key: str, token: str, ttl: float) -> bool:
        """Hold the slot ``ttl`` seconds more (False: it had expired and was taken)."""
        ...

    def give_back(self, key: str, token: str) -> None:
        """Free the slot."""
        ...


def take_slot(
    held: dict[str, float], now: float, limit: int, ttl: float
) -> tuple[dict[str, float], str | None]:
    """The slot step shared by the memory and file stores: the holders left after the
    expired ones go, and a new holder's token (None: all ``limit`` slots are held)."""
    alive = {token: until for token, until in held.items() if until > now}
    if len(alive) >= limit:
        return alive, None
    token = uuid.uuid4().hex
    alive[token] = now + ttl
    return alive, token


class MemorySlots:
    """Slots in this process's memory."""

    def __init__(self) -> None:
        self._held: dict[str, dict[str, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, limit: int, ttl: float) -> str | None:
        with self._lock:
            self._held[key], token = take_slot(self._held.get(key, {}), time.time(), limit, ttl)
        return token

    def renew(self, key: str, token: str, ttl: float) -> bool:
        with self._lock:
            held = self._held.get(key, {})
            if held.get(token, 0.0) <= time.time():
                return False
            held[token] = time.time() + ttl
        return True

    def give_back(self, key: str, token: str) -> None:
        with self._lock:
            self._held.get(key, {}).pop(token, None)


class FileSlots:
    """Slots in a JSON file shared by every process on the machine (``fcntl`` lock)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @contextmanager
    def _state(self) -> Iterator[dict[str, dict[str, float]]]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with os.fdopen(os.dup(fd), "r+", encoding="utf-8") as fh:
                raw = fh.read()
                try:
                    data = json.loads(raw) if raw.strip() else {}
                except json.JSONDecodeError:
                    data = {}
                if not isinstance(data, dict):
                    data = {}
                yield data
                fh.seek(0)
                fh.truncate()
                fh.write(json.dumps(data))
                fh.flush()
        finally:
            os.close(fd)

    def take(self, key: str, limit: int, ttl: float) -> str | None:
        with self._state() as data:
            data[key], token = take_slot(dict(data.get(key) or {}), time.time(), limit, ttl)
        return token

    def renew(self, key: str, token: str, ttl: float) -> bool:
        with self._state() as data:
            held = dict(data.get(key) or {})
            if float(held.get(token, 0.0)) <= time.time():
                return False
            held[token] = time.time() + ttl
            data[key] = held
        return True

    def give_back(self, key: str, token: str) -> None:
        with self._state() as data:
            held = dict(data.get(key) or {})
            held.pop(token, None)
            data[key] = held


# KEYS[1]: the key's sorted set (token -> expiry, on Redis's clock); ARGV: limit, ttl, token
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 60)
return 1
"""
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local expires = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
if not expires or expires <= now then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[1])) + 60)
return 1
"""


class RedisSlots:
    """Slots in Redis: a sorted set per key, stepped by Lua scripts (atomic)."""

    def __init__(self, client: Any, prefix: str = "concordia:slots:") -> None:
        self.client = client
        self.prefix = prefix
        self._take = client.register_script(_TAKE)
        self._renew = client.register_script(_RENEW)

    @classmethod
    def from_url(cls, url: str, prefix: str = "concordia:slots:") -> RedisSlots:
        return cls(redis.Redis.from_url(url), prefix)

    def take(self, key: str, limit: int, ttl: float) -> str | None:
        token = uuid.uuid4().hex
        taken = self._take(keys=[self.prefix + key], args=[limit, ttl, token])
        return token if int(taken) else None

    def renew(self, key: str, token: str, ttl: float) -> bool:
        return bool(int(self._renew(keys=[self.prefix + key], args=[ttl, token])))

    def give_back(self, key: str, token: str) -> None:
        self.client.zrem(self.prefix + key, token)
