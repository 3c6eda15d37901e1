"""How many ``io`` worker processes one endpoint may hold at once.

A run or a probe takes a slot of its endpoint before it sends anything
(``SERVED_ENDPOINT_SLOTS`` of them per shared endpoint; a researcher's endpoints share
the researcher's slots, so adding endpoints gets no more), so a slow or hostile server
holds at most that many processes and the others stay free for everyone else's work.
Work that finds every slot held is sent again a little later (a run stays PENDING). A
slot is held for a lease, renewed as the work goes on, so one whose worker was killed
frees itself. Slots live in Redis when the broker is Redis, else in a file under the
data directory (every process of this machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from scoring.lm.served import FileSlots, RedisSlots, Slots
from studies.models import Endpoint

RETRY_SECONDS = 5.0  # a message that found no free slot comes back this much later


def store() -> Slots:
    broker = str(settings.CELERY_BROKER_URL)
    if broker.startswith(("redis://", "rediss://")):
        return RedisSlots.from_url(broker)
    return FileSlots(Path(settings.DATA_DIR) / "served-slots.json")


def slot_key(endpoint: Endpoint) -> str:
    """Whose slots: the researcher's (all their endpoints), or the shared endpoint's."""
    if endpoint.owner_id is not None:
        return f"owner:{endpoint.owner_id}"
    return f"endpoint:{endpoint.pk}"


@dataclass
class Slot:
    """A held slot; :meth:`renew` it while working for longer than its lease."""

    slots: Slots
    key: str
    token: str
    lease: float

    def renew(self) -> None:
        self.slots.renew(self.key, self.token, self.lease)


@contextmanager
def held(endpoint: Endpoint, lease: float) -> Iterator[Slot | None]:
    """A slot of the endpoint for the block (given back after it), or None when every
    slot is held."""
    slots = store()
    key = slot_key(endpoint)
    token = slots.take(key, settings.CONCORDIA["SERVED_ENDPOINT_SLOTS"], lease)
    if token is None:
        yield None
        return
    try:
        yield Slot(slots, key, token, lease)
    finally:
        slots.give_back(key, token)
