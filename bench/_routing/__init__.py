"""The parts of ``bench/routing.py``: SummEval and its scores (``data``), the simulated
campaigns and the oracles (``simulation``), and the lease timing on Django (``lease``)."""
