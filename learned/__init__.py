"""Learned metrics (HEAP-style): trained from a dataset's own judgments, then scored like
any other metric. Models, services, the training task, pages and ``train_metric``."""
