"""Careful reading, and judges measured against it: blinded annotation, agreement with the readers, validity cards.

``export`` writes blinded items (or arena pairs), ``sheets`` imports filled sheets as readers' labels, ``merge``
joins exports made in batches and ``adjudication`` settles two readers' disagreements (``annotate`` re-exports
their names for ``backtest annotate``); ``validate`` measures a judge against readers' labels; ``cards`` keeps each
judge's measured validity, printed next to every rate it labels.
"""
