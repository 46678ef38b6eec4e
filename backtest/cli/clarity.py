"""``backtest clarity score PATH`` and ``backtest clarity rate PATH --llm CONFIG``: the clarity of a question set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from backtest.cli.common import OutPath, echo_json, json_option, workspace
from backtest.core.errors import BadInput, CheckFailed
from backtest.text.clarity import CLARITY_THRESHOLD, CLARITY_VERSION


def load_question_set(path: Path) -> tuple[str, list[Any]]:
    """(what PATH is, its questions): a frozen set (seal and hashes verified), a submission folder, or a
    questions.jsonl file."""
    from backtest.submit.freeze import FROZEN_FILE, load_frozen
    from backtest.submit.loading import QUESTIONS_FILE, parse_questions

    if not path.exists():
        raise BadInput(f"{path}: no such file or folder")
    if path.is_dir() and (path / FROZEN_FILE).is_file():
        bundle = load_frozen(path)
        return f"frozen set {bundle.frozen.system} v{bundle.frozen.version}", bundle.questions
    target = path / QUESTIONS_FILE if path.is_dir() else path
    if not target.is_file():
        raise BadInput(f"{path}: not a frozen set, a submission folder or a {QUESTIONS_FILE} file")
    if target.stat().st_size > 64 << 20:
        raise BadInput(f"{target}: over the 64 MiB limit of a questions file")
    questions, _, _ = parse_questions(target.read_bytes(), target)
    return f"questions {target}", questions


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    from backtest.core.fileio import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows))


def summarise(scores: list[float], threshold: float) -> dict[str, Any]:
    """Mean, share below ``threshold`` and quartiles of a set's clarity scores."""
    ordered = sorted(scores)
    n = len(ordered)
    below = sum(s < threshold for s in ordered)
    return {
        "version": CLARITY_VERSION,
        "threshold": threshold,
        "n": n,
        "mean": round(sum(ordered) / n, 4),
        "median": ordered[n // 2],
        "below": below,
        "share_below": round(below / n, 4),
    }


@click.group("clarity")
def clarity() -> None:
    """The clarity of questions: the deterministic clarity score, and an optional LLM clarity rater."""


@clarity.command("score")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=CLARITY_THRESHOLD,
    show_default=True,
    help="Count the questions scoring below this (the freeze gate's --clarity-threshold).",
)
@click.option("--out", type=OutPath(dir_okay=False, path_type=Path), help="Write one JSON line per question here.")
@json_option
def score_cmd(path, threshold, out, as_json):
    """Score each question of PATH (a frozen set, a submission folder or a questions.jsonl) for clarity.

    The score (0-1, 1 = no problem found) is deterministic and fitted to nothing: the product of (1 - penalty)
    over the checks that fire: empty, too_long, too_short, garbled_text, not_a_question, several_sentences,
    two_questions, leading, contradictory_quantifiers, unresolved_reference, no_subject (docs/submit.md). Prints
    each question's score and problems (check: 'matched span'), then the set's mean and share below --threshold.
    """
    from backtest.text.clarity import clarity_score

    what, questions = load_question_set(path)
    rows = [{"question_id": q.question_id, **clarity_score(q.question).as_dict()} for q in questions]
    summary = summarise([r["score"] for r in rows], threshold)
    if out:
        _write_jsonl(out, rows)
    if as_json:
        echo_json({"path": str(path), "summary": summary, "questions": rows})
        return
    for row in rows:
        found = "; ".join(f"{p['check']}: {p['span']!r}" for p in row["problems"][:4])
        click.echo(f"{row['score']:.2f}  {row['question_id']}  {found}")
    click.echo(
        f"{what}: clarity ({CLARITY_VERSION}) mean {summary['mean']:.2f}, median {summary['median']:.2f}, "
        f"{summary['below']} of {summary['n']} ({summary['share_below']:.0%}) below {threshold:g}"
    )


@clarity.command("rate")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--llm",
    "config",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="LLM config (judges/NAME.toml: base_url, model, api_key_env; a judge's prompt settings are ignored).",
)
@click.option("--out", type=OutPath(dir_okay=False, path_type=Path), help="Write one JSON line per question here.")
@json_option
@click.pass_context
def rate_cmd(ctx, path, config, out, as_json):
    """Ask an LLM to rate each question of PATH for clarity (1-5) and name its main problem.

    Goes through the shared LLM client: temperature 0, a JSON schema for the answer, retries, bounded
    concurrency, and an answer cache (the config's `cache`, default .cache/llm-clarity.sqlite), so a rerun
    makes no call. The API key is read from the environment variable the config names and written nowhere.
    Each line also carries the deterministic score, to compare the two. Exit 1 when some question got no
    usable rating (the others are still printed and written).
    """
    from backtest.text.clarity import clarity_score
    from backtest.text.clarity_llm import LLMClarityRater

    what, questions = load_question_set(path)
    if not config.is_file():
        raise BadInput(f"{config}: no such LLM config")
    rater = LLMClarityRater(config, ws=workspace(ctx))
    try:
        ratings = rater.rate_many([q.question for q in questions])
    finally:
        rater.close()
    info = rater.info()
    rows = []
    for q, rating in zip(questions, ratings):
        rows.append(
            {
                "question_id": q.question_id,
                "llm_clarity": rating.clarity,
                "llm_problem": rating.problem,
                "cached": rating.cached,
                "error": rating.error,
                "score": clarity_score(q.question).score,
                "version": CLARITY_VERSION,
                "rater": info,
            }
        )
    rated = [r for r in rows if r["llm_clarity"] is not None]
    summary: dict[str, Any] = {
        "n": len(rows),
        "rated": len(rated),
        "failed": len(rows) - len(rated),
        "cached": sum(r["cached"] for r in rows),
        "mean_llm_clarity": round(sum(r["llm_clarity"] for r in rated) / len(rated), 4) if rated else None,
        "spearman_with_score": _spearman([r["llm_clarity"] for r in rated], [r["score"] for r in rated]),
        "rater": info,
    }
    if out:
        _write_jsonl(out, rows)
    if as_json:
        echo_json({"path": str(path), "summary": summary, "questions": rows})
    else:
        for row in rows:
            rating = f"llm {row['llm_clarity']} ({row['llm_problem']})" if row["llm_clarity"] else "no rating"
            click.echo(f"{row['question_id']}  {rating}  score {row['score']:.2f}")
        mean = summary["mean_llm_clarity"]
        rho = summary["spearman_with_score"]
        click.echo(
            f"{what}: {summary['rated']} of {summary['n']} rated by {info['name']} ({info['model']}; "
            f"{summary['cached']} from the cache), mean {mean if mean is None else f'{mean:.2f}'} of 5, "
            f"Spearman with the clarity score {'n/a' if rho is None else f'{rho:.2f}'}"
        )
    failed = [f"{r['question_id']}: no usable clarity rating ({r['error']})" for r in rows if r["llm_clarity"] is None]
    if failed:
        raise CheckFailed(f"{len(failed)} of {len(rows)} questions got no usable rating; {failed[0]}", failed)


def _spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rho, or None when undefined (fewer than 3 pairs, or a constant side)."""
    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    from scipy.stats import spearmanr

    return round(float(spearmanr(a, b).statistic), 4)


COMMANDS = [clarity]
