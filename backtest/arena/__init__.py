"""Pairwise arena: contexts, pairwise judges with A/B swapping and order folding, the
Bradley–Terry–Davidson leaderboard with a case-level bootstrap, and rubric diagnostics."""
