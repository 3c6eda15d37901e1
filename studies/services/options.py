"""One option of a tuner or a metric runner, declared once where it is read: a form's
field, an API serializer's field and a command's flag are derived from it (as netbox's
data backends own their ``parameters``). A leaf: it imports nothing of ours."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Option:
    """An option: its name (the form's and the API's field, ``n_samples``; the flag
    ``--n-samples`` unless ``flag_name`` says otherwise), type, default, help and
    choices; for a run option also the bounds, a choice's words on the page, and where
    it lands in the request it fills (``field``: ``reference_aggregation``)."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    # what the page and the API say of each choice (a choice not here: itself)
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict, hash=False)
    label: str = ""  # the page's label (empty: the name's words)
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None  # text only
    attr: str = ""  # the request's field it fills, when not ``name``
    flag_name: str = ""  # the command's flag, when not ``name`` (``samples``)
    dashed: bool = False  # the command spells its values with dashes (``src-hypo``)
    command_only: bool = False  # the command's flag, not a field of the page or the API

    @property
    def flag(self) -> str:
        return "--" + (self.flag_name or self.name).replace("_", "-")

    @property
    def field(self) -> str:
        """The request's field it fills (``RunRequest``'s)."""
        return self.attr or self.name

    def choice_labels(self) -> list[tuple[str, str]]:
        """The choices with their words, as a form's and a serializer's choices."""
        return [(c, self.labels.get(c, c)) for c in self.choices]
