"""backtest: a harness that makes claims about question-generating systems falsifiable.

A system reads only a past corpus, emits research questions, the questions are
sealed ("frozen"), and only then is a temporally isolated future corpus searched
and judged. See ``../shared/DESIGN.md`` and the README for the protocol.
"""

__version__ = "0.1.0"
