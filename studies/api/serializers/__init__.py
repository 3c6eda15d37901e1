"""API serializers, one module per area."""
