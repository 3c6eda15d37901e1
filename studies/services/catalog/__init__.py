"""What a run is made of besides the data: the models it may use (:mod:`.model_catalog`:
the default, the installed ones and the hub ids an admin allowed, with their files'
fingerprints) and G-Eval's evaluation steps (:mod:`.steps`).

Import the module you need; this package re-exports nothing.
"""
