"""Writing an import's rows without model instances: new rows straight in (PostgreSQL
``COPY``, elsewhere ``executemany``), and the rows that may be stored already through one
set-based merge per batch: the batch's rows go into a staging table (``COPY`` /
``executemany``), then one ``UPDATE … FROM`` the staging table changes the stored rows
whose value differs, and one ``INSERT … SELECT … WHERE NOT EXISTS`` adds the missing ones.

Nothing is read back into Python to be compared: a re-import of an unchanged file costs
the staging of its rows and two statements that change nothing (a row whose value is the
same is not touched: no write, no new ``updated_at``). SQLite needs 3.33 or later for
``UPDATE … FROM``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Model

from studies.models import Output

STAGE = "concordia_stage"  # a temporary table per target table: concordia_stage_<table>
MANY = 10_000  # rows per executemany


@dataclass(frozen=True)
class Target:
    """A table merged by key: ``keys`` and ``values`` are the staged columns (attribute
    names, ``output_id``), ``fixed`` columns hold one value for the whole import (part of
    the key: ``import_file``), ``only`` limits the stored rows compared (SQL on the
    table's columns), ``inserted`` columns are given on insert only, and ``stamped``
    tables get ``created_at``/``updated_at`` (``updated_at`` again on a change)."""

    model: type[Model]
    keys: tuple[str, ...]
    values: tuple[str, ...]
    fixed: dict[str, Any] = field(default_factory=dict)
    only: str = ""
    inserted: dict[str, Any] = field(default_factory=dict)
    stamped: bool = False


def _quote(name: str) -> str:
    return str(connection.ops.quote_name(name))


def _column(model: type[Model], attname: str) -> str:
    return _quote(model._meta.get_field(attname.removesuffix("_id")).column)  # type: ignore[union-attr]


def _differs() -> str:
    return "IS DISTINCT FROM" if connection.vendor == "postgresql" else "IS NOT"


def stage(model: type[Model], columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Load ``rows`` into the (emptied) temporary staging table of ``model``'s table, its
    columns typed as ``columns`` of the table; its quoted name."""
    table = model._meta.db_table
    name = _quote(f"{STAGE}_{table}")
    names = ", ".join(_column(model, c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"CREATE TEMP TABLE IF NOT EXISTS {name} ON COMMIT DROP AS "
                f"SELECT {names} FROM {_quote(table)} WITH NO DATA"
            )
            cursor.execute(f"TRUNCATE {name}")
            with cursor.cursor.copy(f"COPY {name} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return name
        # SQLite: the staging table takes the column's affinity from the query
        cursor.execute(f"DROP TABLE IF EXISTS temp.{name}")
        cursor.execute(f"CREATE TEMP TABLE {name} AS SELECT {names} FROM {_quote(table)} WHERE 0")
        marks = ", ".join("%s" for _ in columns)
        sql = f"INSERT INTO {name} ({names}) VALUES ({marks})"
        for start in range(0, len(rows), MANY):
            cursor.executemany(sql, rows[start : start + MANY])
    return name


def merge(target: Target, rows: Sequence[Sequence[Any]], now: Any = None) -> tuple[int, int]:
    """Merge ``rows`` (``keys`` then ``values``, one per key) into the table; (created,
    updated). A stored row whose values are all the same is left as it is."""
    if not rows:
        return 0, 0
    model = target.model
    table = _quote(model._meta.db_table)
    staged = stage(model, target.keys + target.values, rows)
    keys = [_column(model, k) for k in target.keys]
    values = [_column(model, v) for v in target.values]
    fixed = [(_column(model, f), v) for f, v in target.fixed.items()]
    match = " AND ".join(
        [f"{table}.{k} = s.{k}" for k in keys]
        + [f"{table}.{f} = %s" for f, _v in fixed]
        + ([f"({target.only})"] if target.only else [])
    )
    params = [v for _f, v in fixed]
    sets = [f"{v} = s.{v}" for v in values]
    set_params: list[Any] = []
    if target.stamped:
        sets.append(f"{_column(model, 'updated_at')} = %s")
        set_params.append(now)
    differs = " OR ".join(f"{table}.{v} {_differs()} s.{v}" for v in values)
    inserted = [(_column(model, c), v) for c, v in target.inserted.items()]
    if target.stamped:
        inserted += [(_column(model, "created_at"), now), (_column(model, "updated_at"), now)]
    insert_columns = keys + values + [f for f, _v in fixed] + [c for c, _v in inserted]
    selected = [f"s.{c}" for c in keys + values] + ["%s"] * (len(fixed) + len(inserted))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET {', '.join(sets)} FROM {staged} AS s "
            f"WHERE {match} AND ({differs})",
            set_params + params,
        )
        updated = cursor.rowcount
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(insert_columns)}) "
            f"SELECT {', '.join(selected)} FROM {staged} AS s "
            f"WHERE NOT EXISTS (SELECT 1 FROM {table} WHERE {match})",
            params + [v for _c, v in inserted] + params,
        )
        created = cursor.rowcount
    return created, updated


def update_by_pk(model: type[Model], columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> int:
    """Set ``columns`` of the rows named by their primary key (each row: pk, then the
    values) in one ``UPDATE … FROM`` a staging table; the rows changed."""
    if not rows:
        return 0
    table = _quote(model._meta.db_table)
    pk = _quote(model._meta.pk.column)  # type: ignore[union-attr]
    staged = stage(model, ("id", *columns), rows)
    names = [_column(model, c) for c in columns]
    sets = ", ".join(f"{c} = s.{c}" for c in names)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {sets} FROM {staged} AS s WHERE {table}.{pk} = s.{pk}")
        return int(cursor.rowcount)


def insert(model: type[Model], columns: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """INSERT plain rows (values in ``columns`` order): on PostgreSQL with one ``COPY``
    (psycopg 3's ``cursor.copy``), elsewhere with one executemany per 10,000 rows."""
    if not rows:
        return
    quote = connection.ops.quote_name
    names = ", ".join(_column(model, c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(
                f"COPY {quote(model._meta.db_table)} ({names}) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(row)
            return
        marks = ", ".join("%s" for _ in columns)
        sql = f"INSERT INTO {quote(model._meta.db_table)} ({names}) VALUES ({marks})"
        for start in range(0, len(rows), MANY):
            cursor.executemany(sql, rows[start : start + MANY])


def insert_outputs(rows: list[tuple[int, str, str, Any]]) -> list[tuple[int, int, str]]:
    """Create outputs (document id, system id, text, own references or None) without
    model instances; (id, document id, system id) of each. PostgreSQL: ``COPY`` into a
    staging table, then one ``INSERT ... SELECT ... RETURNING``; elsewhere an executemany
    and a lookup by the batch's documents."""
    quote = connection.ops.quote_name
    table = quote(Output._meta.db_table)
    refs = quote(Output._meta.get_field("references").column)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE TEMP TABLE IF NOT EXISTS concordia_stage_outputs "
                "(document_id bigint, system_id text, text text, refs jsonb) ON COMMIT DROP"
            )
            cursor.execute("TRUNCATE concordia_stage_outputs")
            with cursor.cursor.copy("COPY concordia_stage_outputs FROM STDIN") as copy:
                for doc, system, text, own in rows:
                    copy.write_row((doc, system, text, None if own is None else json.dumps(own)))
            cursor.execute(
                f"INSERT INTO {table} (document_id, system_id, text, {refs}) "
                "SELECT document_id, system_id, text, refs FROM concordia_stage_outputs "
                "RETURNING id, document_id, system_id"
            )
            return [tuple(row) for row in cursor.fetchall()]  # type: ignore[misc]
        cursor.executemany(
            f"INSERT INTO {table} (document_id, system_id, text, {refs}) VALUES (%s, %s, %s, %s)",
            [(d, sy, t, None if o is None else json.dumps(o)) for d, sy, t, o in rows],
        )
    wanted = {(d, sy) for d, sy, _t, _o in rows}
    found = Output.objects.filter(document_id__in={d for d, _s in wanted}).order_by()
    return [
        (pk, doc, system)
        for pk, doc, system in found.values_list("pk", "document_id", "system_id")
        if (doc, system) in wanted
    ]
