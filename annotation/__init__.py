"""Annotation in the browser: campaigns, queues with overlap and leases, Likert and
pairwise judgments, gold items and agreement (a Django app, label ``annotation``)."""
