"""The embedded broker (evalsite/broker.py) under concurrent writers and readers: real
processes send large messages while others take them as fast as they can. kombu's own
filesystem transport let a reader take a file before it was written (issue 43: the
light worker died of ``JSONDecodeError``); here every message arrives once, whole.
The broker's 20,000-message figure with real Celery workers is ``bench/broker.py``'s."""

from __future__ import annotations

import multiprocessing
import os
import queue
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from kombu import Connection

from evalsite import broker
from evalsite.celery import app

SENDERS, READERS = 2, 3
MESSAGES = 150  # per sender
PAD = 256 * 1024  # bytes per message: a file takes a while to write, as an import's does


def _connection(folder: Path) -> Connection:
    """A connection on the embedded broker's transport (whatever broker the suite runs
    on: this one is the demo's)."""
    options = {
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "control_folder": str(folder / "control"),
        "store_processed": False,
    }
    return Connection("filesystem://", transport=broker.Transport, transport_options=options)


def _send(folder: Path, sender: int) -> None:
    with _connection(folder) as conn:
        box = conn.SimpleQueue("stress")
        for k in range(MESSAGES):
            box.put({"id": f"{sender}-{k}", "pad": "x" * PAD})
        box.close()


def _read(folder: Path, results: Any, senders_done: Any) -> None:
    got, errors = [], []
    with _connection(folder) as conn:
        box = conn.SimpleQueue("stress")
        while True:
            try:
                message = box.get(timeout=0.05)
            except queue.Empty:
                if senders_done.is_set():
                    try:  # one last look once every sender is done
                        message = box.get(timeout=0.5)
                    except queue.Empty:
                        break
                else:
                    continue
            except Exception as exc:  # what killed the Celery worker
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            body = message.payload
            message.ack()
            if len(body["pad"]) != PAD:
                errors.append(f"message {body['id']} cut short")
            got.append(body["id"])
        box.close()
    results.put((got, errors))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks its writers and readers")
def test_concurrent_senders_and_readers_lose_duplicate_and_break_no_message(tmp_path):
    for sub in ("queue", "control"):
        (tmp_path / sub).mkdir()
    fork = multiprocessing.get_context("fork")
    results, senders_done = fork.Queue(), fork.Event()
    readers = [
        fork.Process(target=_read, args=(tmp_path, results, senders_done)) for _ in range(READERS)
    ]
    senders = [fork.Process(target=_send, args=(tmp_path, k)) for k in range(SENDERS)]
    for proc in [*readers, *senders]:
        proc.start()
    for proc in senders:
        proc.join(timeout=120)
        assert proc.exitcode == 0, "a sender failed"
    senders_done.set()
    outcomes = [results.get(timeout=120) for _ in readers]
    for proc in readers:
        proc.join(timeout=30)
    received = [i for got, _ in outcomes for i in got]
    errors = [e for _, errs in outcomes for e in errs]
    assert errors == [], errors[:5]
    assert len(received) == len(set(received)), "a message was delivered twice"
    sent = {f"{s}-{k}" for s in range(SENDERS) for k in range(MESSAGES)}
    assert set(received) == sent, f"{len(sent - set(received))} messages lost"
    assert not list((tmp_path / "queue").glob("*.msg"))


def test_a_file_that_is_no_message_is_set_aside_and_the_next_one_read(tmp_path, caplog):
    for sub in ("queue", "control"):
        (tmp_path / sub).mkdir()
    with _connection(tmp_path) as conn:
        box = conn.SimpleQueue("stray")
        junk = tmp_path / "queue" / f"{0:015d}_junk.stray.msg"
        junk.write_bytes(b'{"half": ')  # left by a writer long gone
        os.utime(junk, (1e9, 1e9))
        box.put({"id": "whole"})
        message = box.get(timeout=5)
        assert message.payload == {"id": "whole"}
        message.ack()
        box.close()
    assert [p.name for p in (tmp_path / "queue" / broker.CORRUPT).iterdir()] == [
        f"{os.getpid()}-{0:015d}_junk.stray.msg"
    ]
    assert "is not a message" in caplog.text


def test_the_app_on_the_embedded_broker_uses_this_transport():
    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("the suite runs on another broker (Redis): nothing embedded to check")
    with app.connection_for_write() as conn:
        assert isinstance(conn.transport, broker.Transport)
