"""Stage 9, the scored run: retrieval and judging resumed question by question, ``metrics.json`` with
exact intervals, the reports, and the typed run files (:mod:`backtest.scoring.outputs`).
"""
