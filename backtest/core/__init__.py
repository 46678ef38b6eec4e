"""Stage 0, the ground everything stands on: errors and exit codes, atomic file I/O, seals and sha256,
``SHA256SUMS``, the versioned records (inputs and the ``Rate``/``Output`` bases of outputs), the workspace,
statistics, plots, and the one :class:`~backtest.core.registry.Registry` of every pluggable family.
"""
