"""Metrics: each module turns outputs (and their documents) into scores."""
