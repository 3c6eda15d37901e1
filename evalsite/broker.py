"""The embedded broker: kombu's filesystem transport, with messages whole before any
worker can see them and taken by exactly one worker.

kombu's filesystem transport (5.x) creates a message file under its final name, then
locks and writes it; a worker listing the folder in between takes the file and reads it
empty or half written (``Unrecoverable error: JSONDecodeError``: the worker dies and its
queue waits, issue 43). It also claims a message by moving it to the system's temporary
folder, which on another filesystem is a copy and a delete, not one step. Here:

- a message is written under a name no reader matches (a dot first, ``.part`` last) and
  renamed to its final name in one step (``os.replace``, atomic within a folder), so a
  reader sees a whole file or none;
- its name starts with the sending time in fixed-width milliseconds, so the names sort
  in the order they were sent (kombu's vary in width);
- a reader claims a message by renaming it into ``.claimed/`` inside the queue folder
  (the same filesystem: one reader wins, the others find it gone and go on), then reads
  it under a shared lock, which waits for a writer of kombu's own transport still
  holding its exclusive one (a sender on the stock transport, an old message);
- a file that is not a message is set aside in ``.corrupt/`` with an error logged: it
  never ends a worker.

Selected by ``CELERY_BROKER_TRANSPORT`` in the settings whenever the broker URL is
``filesystem://`` (the demo's and the tests' default). Measured by ``bench/broker.py``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from collections import deque
from queue import Empty
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

log = logging.getLogger(__name__)
CLAIMED = ".claimed"  # inside the queue folder: a rename there is one step
CORRUPT = ".corrupt"
STAMP_WIDTH = 15  # digits of the sending time in ms: names sort in sending order
WRITER_GRACE_S = 2.0  # how long a reader waits for a stock writer to fill a file it took


def message_name(queue: str) -> str:
    """The final file name of a message for ``queue``, sent now."""
    stamp = int(round(time.monotonic() * 1000))
    return f"{stamp:0{STAMP_WIDTH}d}_{uuid.uuid4()}.{queue}.msg"


class Channel(filesystem.Channel):
    """kombu's filesystem channel with an atomic write and an atomic claim."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # each queue's messages from the last listing, oldest first (newer ones sort
        # after them, so the order holds until the backlog is spent and listed again)
        self._backlog: dict[str, deque[str]] = {}

    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:
        """Write the message whole under a hidden name, then rename it into view."""
        body = str_to_bytes(dumps(payload))
        name = message_name(queue)
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as fh:
                fh.write(body)
            os.replace(partial, final)
        except OSError as exc:
            _remove_quietly(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue: str) -> Any:
        """The oldest message of ``queue`` that this reader is first to claim."""
        claimed_dir = os.path.join(self.data_folder_in, CLAIMED)
        os.makedirs(claimed_dir, exist_ok=True)
        backlog = self._backlog.get(queue)
        if not backlog:
            backlog = self._backlog[queue] = deque(self._listing(queue))
        while backlog:
            name = backlog.popleft()
            claimed = os.path.join(claimed_dir, f"{os.getpid()}-{name}")
            try:
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except OSError:  # another reader took it (or purged it) first
                continue
            payload = self._read(claimed)
            if payload is None:
                continue
            if self.store_processed:
                os.replace(claimed, os.path.join(self.processed_folder, name))
            else:
                _remove_quietly(claimed)
            return payload
        raise Empty()

    def _listing(self, queue: str) -> list[str]:
        wanted = f"{queue}.msg"
        return sorted(
            name for name in os.listdir(self.data_folder_in) if name.partition(".")[2] == wanted
        )

    def _read(self, path: str) -> Any:
        """The message in ``path`` (claimed by this reader), or None when the file holds
        none: then it is set aside in ``.corrupt/`` and an error logged."""
        while True:
            try:
                with open(path, "rb") as fh:
                    filesystem.lock(fh, filesystem.LOCK_SH)  # a stock writer holds LOCK_EX
                    try:
                        raw = fh.read()
                    finally:
                        filesystem.unlock(fh)
                written = os.stat(path).st_mtime
            except OSError as exc:
                raise ChannelError(f"Cannot read file {path!r} from queue.") from exc
            try:
                return loads(bytes_to_str(raw))
            except ValueError:
                # a stock writer may have created the file and not locked it yet: it
                # still holds it open and writes into it
                if time.time() - written >= WRITER_GRACE_S:
                    break
                time.sleep(0.05)
        corrupt_dir = os.path.join(self.data_folder_in, CORRUPT)
        os.makedirs(corrupt_dir, exist_ok=True)
        kept = os.path.join(corrupt_dir, os.path.basename(path))
        os.replace(path, kept)
        log.error("broker: %s is not a message (%d bytes); set aside as %s", path, len(raw), kept)
        return None


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)


class Transport(filesystem.Transport):
    """The filesystem transport with :class:`Channel`."""

    Channel = Channel
