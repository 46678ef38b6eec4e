"""Stage 2: the OpenAI-compatible client (cache, bounded retries through tenacity) and the LLM settings read
from one TOML config (:mod:`backtest.llm.settings`), shared by judges, pairwise judges, rubrics and the LLM
equivalence rule.
"""
