"""The parts of ``bench/ingest.py``: where it writes (``environment``) and what it prints
(``report``)."""
