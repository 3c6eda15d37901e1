"""API views, one module per area."""
