"""Stage 12, whole studies built on one freeze-and-score pipeline (:mod:`backtest.studies.pipeline`):
the baselines, the temporal stress test, prospective commitments and their grading, and the demo.
"""
