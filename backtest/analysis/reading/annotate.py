"""Blinded annotation, the names ``backtest annotate`` and its callers import, from the modules that own them:

* :mod:`~backtest.analysis.reading.export` -- ``annotate export``: blinded items from scored runs, or pairs
  from arenas, with a blank sheet and the private ``decode.json``;
* :mod:`~backtest.analysis.reading.sheets` -- ``annotate import``: a filled sheet (or Label Studio's export)
  checked against its items and written as a reader's labels;
* :mod:`~backtest.analysis.reading.merge` -- ``annotate merge``: exports made in batches joined into one set;
* :mod:`~backtest.analysis.reading.adjudication` -- ``annotate adjudicate``: two readers' disagreements settled,
  and the check that the adjudicated labels still follow from them.
"""

from __future__ import annotations

from backtest.analysis.reading.adjudication import (
    ADJUDICATED,
    LABELS_LOCK,
    READERS,
    Decision,
    adjudicate,
    adjudicated_readers,
    check_adjudicated,
    check_readers,
    disagreements,
)
from backtest.analysis.reading.export import (
    DEFAULT_CODEBOOK,
    PAIR_GUIDE,
    export_items,
    export_pairs,
    render_item,
    render_pair,
)
from backtest.analysis.reading.items import BETTER
from backtest.analysis.reading.merge import merge_exports
from backtest.analysis.reading.sheets import (
    PAIR_SHEET_COLUMNS,
    SHEET_COLUMNS,
    import_sheet,
    row_label,
    write_labels,
)

__all__ = [
    "ADJUDICATED",
    "BETTER",
    "DEFAULT_CODEBOOK",
    "LABELS_LOCK",
    "PAIR_GUIDE",
    "PAIR_SHEET_COLUMNS",
    "READERS",
    "SHEET_COLUMNS",
    "Decision",
    "adjudicate",
    "adjudicated_readers",
    "check_adjudicated",
    "check_readers",
    "disagreements",
    "export_items",
    "export_pairs",
    "import_sheet",
    "merge_exports",
    "render_item",
    "render_pair",
    "row_label",
    "write_labels",
]
