"""Human scores against their aspect's scale during an import.

A score outside its aspect's scale is an error unless the import says, explicitly, what
to do with it: *rescale* the file's scores linearly from a stated source range onto the
aspect's scale, or *widen*, i.e. import them into a wider copy of the aspect. An aspect
that an import creates takes its scale from the file's values, rounded outward.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

SourceRanges = dict[str, tuple[float, float]]  # file score name (lower case) -> (low, high)
_RANGE = re.compile(r"^\s*([^=\s]+)\s*=\s*([^:]+):(.+)$")


def fmt(value: float) -> str:
    """A score as people write it: ``1``, ``0.5``, ``-7``, ``1e+308``."""
    return f"{value:g}"


def fmt_range(low: float, high: float) -> str:
    return f"{fmt(low)}–{fmt(high)}" if low != high else fmt(low)


def parse_ranges(items: list[str] | str) -> SourceRanges:
    """``["informativeness=1:6", ...]`` or ``"informativeness=1:6, quality=0:100"`` →
    ``{"informativeness": (1.0, 6.0), ...}``; ValueError naming the bad item."""
    if isinstance(items, str):
        items = [part for part in items.replace(";", ",").split(",") if part.strip()]
    ranges: SourceRanges = {}
    for item in items:
        match = _RANGE.match(item)
        try:
            if not match:
                raise ValueError
            low, high = float(match.group(2)), float(match.group(3))
        except ValueError:
            raise ValueError(
                f"{item.strip()!r}: write NAME=LOW:HIGH, e.g. informativeness=1:6"
            ) from None
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"{item.strip()!r}: LOW must be below HIGH, both finite numbers")
        ranges[match.group(1).lower()] = (low, high)
    return ranges


def holds(aspect: Any, low: float, high: float) -> bool:
    """Whether ``aspect``'s scale holds every value from ``low`` to ``high``."""
    return bool(aspect.scale_min <= low <= high <= aspect.scale_max)


def out_of_scale(
    name: str, value: float, aspect: Any, rescale: SourceRanges, widen: bool
) -> str | None:
    """Why ``value`` cannot be stored for ``aspect`` (None: it can, or will be rescaled
    or widened). ``aspect`` is None for an aspect the import will create."""
    source = rescale.get(name.lower())
    if source is not None:
        if source[0] <= value <= source[1]:
            return None
        return f"{fmt(value)} is outside the stated source range {fmt_range(*source)}"
    if aspect is None or widen or aspect.scale_min <= value <= aspect.scale_max:
        return None
    return (
        f"{fmt(value)} is outside the aspect's scale {fmt_range(aspect.scale_min, aspect.scale_max)}"
        f" ({aspect.code}); rescale explicitly (--rescale {name}=LOW:HIGH) or import into"
        " a wider aspect (--widen-aspects; upload page: the same options)"
    )


def rounded_range(low: float, high: float) -> tuple[float, float]:
    """The scale of an aspect created from observed scores: outward to whole numbers
    when the scores span at least 1 (Likert-like: 1.33..4.67 → 1..5), else to the
    span's order of magnitude (0.03..0.97 → 0..1); a single value v gives v..v+1."""
    span = high - low
    if span <= 0:
        rounded = (float(math.floor(low)), float(math.floor(low) + 1))
    else:
        step = 1.0 if span >= 1 else 10.0 ** math.floor(math.log10(span))
        digits = max(0, -math.floor(math.log10(step))) if step > 0 else 0
        rounded = (
            (
                round(math.floor(low / step) * step, digits),
                round(math.ceil(high / step) * step, digits),
            )
            if step > 0
            else (low, high)
        )
    if rounded[0] < rounded[1] and rounded[0] <= low and high <= rounded[1]:
        return rounded
    # floats too large or too close for the rounding above to keep min < max
    if low < high:
        return low, high
    return (
        (low, math.nextafter(low, math.inf)) if low < 0 else (math.nextafter(low, -math.inf), low)
    )


def linear(source: tuple[float, float], target: tuple[float, float]) -> Callable[[float], float]:
    """The linear map of ``source`` onto ``target`` (both (low, high))."""
    (s_low, s_high), (t_low, t_high) = source, target

    def scaled(value: float) -> float:
        # halves: the differences of two huge floats must not overflow to inf
        fraction = (value / 2 - s_low / 2) / (s_high / 2 - s_low / 2)
        return min(max(t_low + fraction * (t_high / 2 - t_low / 2) * 2, t_low), t_high)

    return scaled


def wider_name(name: str, code: str, low: float, high: float) -> tuple[str, str]:
    """Name and code of the wider copy of an aspect: ``Informativeness 1–6``, ``INF_1_6``."""
    wider_code = re.sub(r"[^A-Z0-9]+", "_", f"{code}_{fmt(low)}_{fmt(high)}".upper()).strip("_")
    return f"{name} {fmt_range(low, high)}"[:100], wider_code[:32]
