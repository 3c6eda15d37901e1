"""Benchmark loaders: one module per benchmark, each defining ``BENCHMARK`` (a
:class:`~studies.services.sources.spec.Benchmark`), registered in :mod:`..registry`."""
