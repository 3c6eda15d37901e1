"""Prompt templates: validation and safe rendering.

Templates are edited by users, so rendering is plain placeholder substitution. A
template may only name the placeholders in :data:`PLACEHOLDERS`; attribute or index
access (``{src.__class__}``, ``{ref[0]}``), conversions (``{src!r}``) and format specs
(``{src:>10}``) are rejected when the template is saved. Literal braces are written
doubled, ``{{`` and ``}}``, as in Python format strings.
"""

from __future__ import annotations

import string
from collections.abc import Mapping

PLACEHOLDERS: frozenset[str] = frozenset(
    {"src", "ref", "hypo", "history", "aspect_definition", "task_description"}
)

_FORMATTER = string.Formatter()


class TemplateError(ValueError):
    """A template that cannot be saved or rendered; the message says why."""


def placeholders(template: str) -> list[str]:
    """Return the placeholders ``template`` uses, in order, after validating it."""
    found: list[str] = []
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError as exc:  # unbalanced braces
        raise TemplateError(
            f"Unbalanced braces in template ({exc}); write a literal brace as {{{{ or }}}}."
        ) from exc
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if field == "":
            raise TemplateError("Empty placeholder {} in template; name one of: " + _known())
        if any(ch in field for ch in ".[]"):
            raise TemplateError(
                f"Placeholder {{{field}}} uses attribute or index access, which is not allowed."
            )
        if conversion:
            raise TemplateError(f"Placeholder {{{field}!{conversion}}} uses a conversion.")
        if spec:
            raise TemplateError(f"Placeholder {{{field}:{spec}}} uses a format spec.")
        if field not in PLACEHOLDERS:
            raise TemplateError(f"Unknown placeholder {{{field}}}; allowed: {_known()}.")
        found.append(field)
    return found


def validate_template(template: str) -> None:
    """Raise :class:`TemplateError` unless ``template`` is safe to store."""
    placeholders(template)


def render(template: str, values: Mapping[str, str]) -> str:
    """Substitute ``values`` into a validated ``template`` without evaluating anything."""
    out: list[str] = []
    for literal, field, _spec, _conversion in _FORMATTER.parse(template):
        out.append(literal)
        if field is None:
            continue
        if field not in PLACEHOLDERS:
            raise TemplateError(f"Unknown placeholder {{{field}}}; allowed: {_known()}.")
        if field not in values:
            raise TemplateError(f"No value given for placeholder {{{field}}}.")
        out.append(values[field])
    return "".join(out)


def _known() -> str:
    return ", ".join("{" + name + "}" for name in sorted(PLACEHOLDERS))
