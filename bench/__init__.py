"""Benchmarks (``make bench``): each ``bench/bench_*.py`` module has ``run(args) -> dict``.

Results go to ``bench/results/<name>.json``. Every benchmark measures our code side
by side with the alternative a user would pick and reports ratios from one run.
"""
