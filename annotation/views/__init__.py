"""Annotation pages: ``annotate`` for annotators, ``campaigns`` for researchers."""
