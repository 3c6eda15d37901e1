"""What the pages, the API and the commands compute from stored scores and judgments:
the correlation matrix (:mod:`.params`, :mod:`.matrix`, cached by :mod:`.dashboards`,
with its human ceiling in :mod:`.ceiling` and its cost in :mod:`.matrix_cost`), the
drill-down of one cell, two runs compared, diagnostics, metric-corrected system means
(:mod:`.ppi`), the sample-size planner, sentinel baselines, the paper tables and the
Vega-Lite charts. Everything reads the scores through :mod:`.frames`, from the
dataset's columnar snapshot (:mod:`.snapshot`).

Import the module you need (``from studies.services.analysis import dashboards``); this
package re-exports nothing, so importing one module never loads the others.
"""
