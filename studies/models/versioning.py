"""The versioning machinery of aspects and prompt templates: an edit of the text a
metric or an annotator reads writes an immutable history row."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models, transaction


class VersionedModel(models.Model):
    """Keeps a history row for each change of the fields in ``versioned_fields``.

    ``save()`` compares those fields with the values loaded from the database and,
    when one changed (or on creation), bumps ``version`` and writes a snapshot to
    ``history_model`` in the same transaction. Set ``_changed_by`` to record who.
    """

    versioned_fields: ClassVar[tuple[str, ...]] = ()
    history_model: ClassVar[str] = ""
    history_fk: ClassVar[str] = ""

    version = models.PositiveIntegerField(default=0, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True

    @classmethod
    def from_db(cls, db: Any, field_names: Any, values: Any) -> Any:
        instance = super().from_db(db, field_names, values)
        instance._loaded = {
            f: getattr(instance, f) for f in cls.versioned_fields if f in field_names
        }
        return instance

    def _snapshot(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.versioned_fields}

    def has_versioned_changes(self) -> bool:
        loaded = getattr(self, "_loaded", None)
        return self._state.adding or loaded is None or loaded != self._snapshot()

    def save(self, *args: Any, **kwargs: Any) -> None:
        with transaction.atomic():
            changed = self.has_versioned_changes()
            if changed:
                self.version = (self.version or 0) + 1
            super().save(*args, **kwargs)
            if changed:
                history = self._meta.apps.get_model("studies", self.history_model)
                history.objects.create(
                    **{self.history_fk: self},
                    version=self.version,
                    created_by=getattr(self, "_changed_by", None),
                    **self._snapshot(),
                )
                self._loaded = self._snapshot()

    def current_version(self) -> Any:
        """The history row matching the current text (both history models use ``versions``)."""
        return self.versions.get(version=self.version)  # type: ignore[attr-defined]


class Snapshot(models.Model):
    """Common fields of a version row: its number, when and by whom it was saved."""

    version = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        abstract = True
