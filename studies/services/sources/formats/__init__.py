"""Tool adapters: one module per tool's export format, each defining ``FORMAT`` (a
:class:`~studies.services.sources.spec.Format`), registered in :mod:`..registry`."""
