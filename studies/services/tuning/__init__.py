"""Tuning judges on human labels with held-out evidence: a study's frozen split of its
documents (``splits``), the one path that serves human labels to a tuner (``labels``,
which refuses test documents), juries of several runs (``jury``), the tuners found by
name (``registry``; one module each, e.g. ``calibration``) and the run that tunes one
judge and measures it on test (``tune``)."""
