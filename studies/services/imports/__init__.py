"""Importing and exporting datasets: the one service behind the upload page, the
``import_records`` command, the import task and the API.

An import reads the file once, streaming: the validation checks every line, collects
located errors (:mod:`.validate`) and keeps the valid items (:mod:`.kept`, spooled to a
temporary file); only when there are none does the write take them back, in one
transaction, in batches (:mod:`.write`, with the aspects it creates, widens or rescales
into in :mod:`.aspects`). Re-importing a file updates changed values and
creates no duplicates. Rows that are not in the file are left alone: an import only adds
or updates. Files are read by :mod:`.records` (pairwise preference files by
:mod:`.pairs`), human values checked against their aspect's kind by :mod:`.labels`
(labels, raters) and its scale by :mod:`.scales`; an upload is a job a worker imports
(:mod:`.jobs`); an export writes the same formats (:mod:`.export`).
"""

from studies.services.imports.export import export_dataset, run_columns
from studies.services.imports.jobs import (
    UploadNotStored,
    create_benchmark_job,
    create_import_job,
    run_import_job,
    upload_not_stored,
)
from studies.services.imports.options import ImportOptions, ImportSummary, ImportValidationError
from studies.services.imports.validate import owned_dataset
from studies.services.imports.write import import_file

__all__ = [
    "ImportOptions",
    "ImportSummary",
    "ImportValidationError",
    "UploadNotStored",
    "create_benchmark_job",
    "create_import_job",
    "export_dataset",
    "import_file",
    "owned_dataset",
    "run_columns",
    "run_import_job",
    "upload_not_stored",
]
