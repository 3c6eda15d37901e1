"""One declared option (:class:`~studies.services.options.Option`, a metric runner's or a
tuner's) as a form field: the run form and the *Tune this judge* form derive their option
fields here, as the API's serializers and the commands' flags derive theirs."""

from __future__ import annotations

from typing import Any

from django import forms
from django.forms.utils import pretty_name

from studies.services.options import Option

MAX_ID = 2**63 - 1  # the largest primary key any database stores


def option_field(option: Option, help_text: str, *, prefill: bool = True) -> forms.Field:
    """``option`` as an optional field (left empty: its default). ``prefill``: the field
    starts at the default; else it starts empty, the default shown as a placeholder."""
    common: dict[str, Any] = {
        "required": False,
        "help_text": help_text,
        "label": option.label or pretty_name(option.name),
    }
    if option.choices:
        return forms.ChoiceField(choices=option.choice_labels(), initial=option.default, **common)
    if prefill:
        common["initial"] = option.default
    unset = prefill or option.default in (None, "")
    shown = {} if unset else {"placeholder": str(option.default)}
    if option.type is bool:
        return forms.BooleanField(**common)
    if option.type is int:  # no larger than a database's key (a campaign's id)
        top = MAX_ID if option.maximum is None else option.maximum
        return forms.IntegerField(
            min_value=option.minimum, max_value=top, widget=forms.NumberInput(shown), **common
        )
    if option.type is float:
        return forms.FloatField(
            min_value=option.minimum,
            max_value=option.maximum,
            widget=forms.NumberInput(shown),
            **common,
        )
    return forms.CharField(max_length=option.max_length, widget=forms.TextInput(shown), **common)
