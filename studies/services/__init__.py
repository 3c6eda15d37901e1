"""Services: the only code that turns rows into scoring types and writes results back.

Packages by concern: ``imports/`` (dataset files in and out, upload jobs), ``runs/``
(metric runs), ``analysis/`` (correlation matrices and everything computed from stored
scores), ``catalog/`` (the models a run may use, G-Eval's evaluation steps); ``queue.py``
is the one way services enqueue work. The modules at this level serve one page or
command each (browse, contents, deletion, lookup, recovery, studies, tokens) or every
file the product writes (csvfile).
"""
