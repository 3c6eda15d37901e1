"""Services: the only code that turns rows into scoring types and writes results back."""
