"""The ``backtest`` command line: a thin click layer over the library.

Each feature's commands live in their own module below and are attached to the
group in :mod:`backtest.cli.main`. Errors become one line on stderr and an exit
code: 2 for bad input or usage, 1 for a failed check (see ``backtest.core.errors``).
"""
