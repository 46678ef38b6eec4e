"""Judges: what became of each frozen question (outcome) and of its premise (premise_status).

``get_judge(name_or_config_path)`` returns a :class:`~backtest.judge.protocol.Judge`:
``offline`` (deterministic, no network, the default) or an ``llm`` judge configured by a
TOML file in ``judges/``. Every judge's answer goes through
:func:`backtest.judge.constraints.check_answer` before it becomes a Judgment.
"""

from backtest.judge.protocol import Judge, JudgeAnswer, get_judge, judge_names, register_judge

__all__ = ["Judge", "JudgeAnswer", "get_judge", "judge_names", "register_judge"]
