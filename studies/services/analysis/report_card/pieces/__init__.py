"""The report card's evidence, one module per piece, registered in :mod:`.registry`."""
