"""Concordia's scoring engine: plain Python (numbers and strings in, numbers out).

Nothing in this package imports Django; the studies app turns rows into these types.
"""
