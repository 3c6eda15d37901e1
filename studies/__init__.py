"""The studies app: datasets, aspects, judgments, metric runs and their pages."""
