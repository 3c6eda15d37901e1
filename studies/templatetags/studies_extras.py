"""Template filters of the dashboards."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def researcher(user: Any) -> bool:
    """Whether ``user`` sees the researcher pages (the navigation shows only those)."""
    from studies.permissions import is_researcher

    return is_researcher(user)


@register.filter
def heat(value: float | None) -> str:
    """A diverging colour for a correlation in [-1, 1]: red below 0, blue above."""
    if value is None:
        return "transparent"
    strength = min(abs(value), 1.0)
    hue = 215 if value >= 0 else 5
    lightness = 97 - 37 * strength  # stays light enough for dark text
    return f"hsl({hue} 70% {lightness:.0f}%)"


@register.filter
def aspect_pk(columns: list[dict[str, Any]], index: int) -> int:
    return int(columns[index]["aspect"]["pk"])


@register.filter
def aspect_code(columns: list[dict[str, Any]], index: int) -> str:
    return str(columns[index]["aspect"]["code"])
