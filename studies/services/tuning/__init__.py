"""Tuning judges on human labels with held-out evidence: a study's frozen split of its
documents (``splits``), the one path that serves human labels to a tuner (``labels``,
which refuses test documents), juries of several runs (``jury``), the tuners found by
name (``registry``; one module each, e.g. ``calibration``), the run that tunes one
judge and measures it on test (``tune``), and tuning as a worker job (``job``; ``routing``
says which runs are jobs and where they run)."""
