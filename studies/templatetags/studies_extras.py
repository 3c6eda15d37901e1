"""Template filters of the dashboards."""

from __future__ import annotations

import math
from typing import Any

from django import template

from studies.permissions import is_researcher
from studies.services.analysis.tables import toggled

register = template.Library()


@register.filter
def researcher(user: Any) -> bool:
    """Whether ``user`` sees the researcher pages (the navigation shows only those)."""
    return is_researcher(user)


@register.filter
def finite(value: Any) -> Any:
    """The value, or None for NaN and ±inf (so ``|default:"—"`` shows a dash, not "nan")."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@register.filter
def signed(value: Any, places: int = 4) -> str:
    """A difference with its sign (``+0.3670``), as the tuning command prints it; "—"
    for none."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{float(value):+.{int(places)}f}"


HEAT_STEPS = 20  # colour classes per sign, defined in static/css/heat.css


@register.filter
def heat(value: float | None) -> str:
    """The CSS class of a diverging colour for a correlation in [-1, 1]: red below 0, blue
    above, darker with strength. A class, not a style attribute: the content security
    policy allows no inline styles."""
    if value is None:
        return "heat-none"
    step = round(min(abs(value), 1.0) * HEAT_STEPS)
    return f"heat-{'p' if value >= 0 else 'n'}{step:02d}"


def heat_css() -> str:
    """The rules of static/css/heat.css (``tests`` check the file is current)."""
    lines = ["/* Written by studies.templatetags.studies_extras.heat_css(); do not edit. */"]
    for sign, hue in (("p", 215), ("n", 5)):
        for step in range(HEAT_STEPS + 1):
            lightness = 97 - 37 * step / HEAT_STEPS  # stays light enough for dark text
            lines.append(
                f".heat-{sign}{step:02d} {{ background: hsl({hue} 70% {lightness:.0f}%); }}"
            )
    return "\n".join(lines) + "\n"


@register.filter
def aspect_pk(columns: list[dict[str, Any]], index: int) -> int:
    return int(columns[index]["aspect"]["pk"])


@register.filter
def aspect_code(columns: list[dict[str, Any]], index: int) -> str:
    return str(columns[index]["aspect"]["code"])


@register.filter
def toggle_sort(sort: str | None, column: str) -> str:
    """The ``sort`` a column's header link asks for (``COH``, then ``-COH``)."""
    return toggled(sort, column)


@register.filter
def sort_arrow(sort: str | None, column: str) -> str:
    """▾ when the table is sorted by ``column`` best first, ▴ when flipped, else ""."""
    raw = sort or ""
    return " ▾" if raw == column else " ▴" if raw == f"-{column}" else ""


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds as a person says them: "under a minute", "about 7 min", "about 2 h 05 min"."""
    if seconds is None:
        return ""
    if seconds < 60:
        return "under a minute"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60:02d} min"
