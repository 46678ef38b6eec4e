"""Judge-validation controls: is the judge reading the evidence, is it stable, is it the prompt?

Each control re-judges a scored run and writes its own run folder next to the original,
never overwriting anything: ``<run_dir>-control-<kind>[-<variant>]`` and, when that
exists already, ``...-v2``, ``-v3``, ... Each folder holds ``RUN.json`` (the original's
instance, frozen set and retriever, the judge used and a ``control`` block),
``retrieval.jsonl`` (exactly the documents the judge was shown, so the leakage checks
apply to a control run too), ``judgments.jsonl``, ``control.json`` (the result) and
``control.md`` (the same in words).

* **mismatch** (:func:`control_mismatch`): every question is judged against *another*
  question's retrieved documents, the pairing being a seeded derangement (a permutation
  with no fixed point, drawn with ``random.Random(seed)`` by rejection). Engagement
  (``answered``, ``partially_addressed`` or ``posed_but_open``) on the true pairings
  (the original run's judgments, or a fresh judging when the judge differs from the
  one that labelled the run) is compared with engagement on the mismatched pairings by a
  two-sided Fisher exact test. The mismatched rate is the judge's *generosity floor*:
  how often it credits a question with documents that are about something else. A judge
  that reads the evidence shows ``true >> mismatched`` with ``p < 0.01`` (the paper's
  LLM judge: 74% versus 20%).
* **rerun** (:func:`control_rerun`): the same judge on the same documents again, with
  its response cache switched off; raw agreement and Cohen's kappa with the first run,
  on ``outcome`` and on ``premise_status``. A deterministic judge must agree fully.
* **prompt** (:func:`control_prompt`): the run's LLM judge with another prompt template
  (e.g. ``judges/prompts/outcome-premise-reworded-v2.md``), everything else unchanged;
  agreement with the original labels.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from backtest.core import stats
from backtest.core.errors import BadInput
from backtest.core.fileio import atomic_write_text, write_jsonl
from backtest.core.records import (
    ENGAGED_OUTCOMES,
    Judgment,
    Question,
    Rate,
    Retrieval,
    RetrievedDocument,
    write_output,
)
from backtest.core.runs import ControlOf, Run, RunJudge
from backtest.core.workspace import Workspace
from backtest.judge.protocol import Judge
from backtest.validity.leakage import RunData, load_run
from backtest.validity.outputs import ControlReport
from backtest.validity.runfolder import RunFolder

CONTROL_KINDS = ("mismatch", "rerun", "prompt")
FIELDS = ("outcome", "premise_status")
SIGNIFICANT = 0.01


# --------------------------------------------------------------------------- pieces


def derangement(n: int, seed: int) -> list[int]:
    """A seeded permutation of ``range(n)`` with no fixed point (``perm[i] != i``); needs n >= 2.

    Uniform over derangements: shuffle with ``random.Random(seed)`` and redraw while any
    element stays in place (about e tries on average). Same seed, same pairing.
    """
    if n < 2:
        raise BadInput(f"a mismatch control needs at least 2 questions with retrieved documents, not {n}")
    rng = random.Random(seed)
    perm = list(range(n))
    while True:
        rng.shuffle(perm)
        if all(i != p for i, p in enumerate(perm)):
            return list(perm)


def engaged(judgment: Judgment) -> bool:
    """True when the outcome is answered, partially_addressed or posed_but_open."""
    return judgment.outcome in ENGAGED_OUTCOMES


def engagement(judgments: Sequence[Judgment]) -> Rate:
    """Engaged count, n, rate and its Clopper–Pearson 95% interval."""
    return stats.proportion(sum(engaged(j) for j in judgments), len(judgments))


def agreement_of(first: Sequence[Judgment], second: Sequence[Judgment]) -> dict[str, Any]:
    """Raw agreement and Cohen's kappa of two labelings of the same questions, per field,
    with the questions whose labels changed (NaN kappa is reported as None)."""
    if [j.question_id for j in first] != [j.question_id for j in second]:
        raise BadInput("agreement needs the same questions in the same order")
    out: dict[str, Any] = {"n": len(first)}
    for name in FIELDS:
        a = [getattr(j, name) for j in first]
        b = [getattr(j, name) for j in second]
        kappa = stats.cohen_kappa(a, b) if a else float("nan")
        out[name] = {
            "raw_agreement": stats.raw_agreement(a, b) if a else None,
            "cohen_kappa": None if kappa != kappa else kappa,
            "changed": [
                {"question_id": j.question_id, "first": x, "second": y} for j, x, y in zip(first, a, b) if x != y
            ],
        }
    return out


def judge_all(judge: Judge, pairs: Sequence[tuple[Question, list[RetrievedDocument]]]) -> list[Judgment]:
    """Judge every (question, shown documents) pair, in order, ``judge.concurrency`` at a time."""
    workers = max(1, judge.concurrency)
    if workers == 1:
        return [judge.judge(q, docs) for q, docs in pairs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda p: judge.judge(*p), pairs))


def run_judge_spec(run: RunData) -> str:
    """The judge a run was scored with, as ``get_judge`` takes it: a config path or a kind name.

    Read from RUN.json (``judge.spec``/``judge.config``; ``judge_settings.kind == "offline"``),
    else the instance's judge config, else the judges' name (``judges/<name>.toml``).
    """
    header = run.header
    info = header.judge if header else None
    if info is not None and info.spec:
        return info.spec
    names = sorted({j.judge.name for j in run.judgments})
    name = (info.name if info else None) or (names[0] if len(names) == 1 else None)
    if ((header.judge_settings if header else None) or {}).get("kind") == "offline" or name == "offline":
        return "offline"
    if run.instance.judge.config and Path(run.instance.judge.config).stem == name:
        return run.instance.judge.config
    if isinstance(name, str) and name:
        return name
    raise BadInput("cannot tell which judge scored this run (RUN.json names none); pass --judge")


def _same_judge(judge: Judge, judgments: Sequence[Judgment]) -> bool:
    """True when ``judge`` is the one that produced ``judgments`` (name, prompt and config hashes)."""
    info = judge.info()
    return all(
        (j.judge.name, j.judge.prompt_sha256, j.judge.config_sha256)
        == (info.name, info.prompt_sha256, info.config_sha256)
        for j in judgments
    )


def _paired(run: RunData) -> tuple[list[Question], list[Retrieval], list[Judgment]]:
    """Questions with their retrieval and original judgment, in question order (all three present)."""
    retrievals = {r.question_id: r for r in run.retrievals}
    judgments = {j.question_id: j for j in run.judgments}
    qs = [q for q in run.questions if q.question_id in retrievals and q.question_id in judgments]
    if not qs:
        raise BadInput("the run has no question with both a retrieval and a judgment")
    return qs, [retrievals[q.question_id] for q in qs], [judgments[q.question_id] for q in qs]


# --------------------------------------------------------------------------- output folders


def control_dir(run_dir: Path, name: str) -> Path:
    """``<run_dir>-control-<name>``, or the first free ``-v<N>`` (N >= 2) beside it."""
    base = run_dir.parent / f"{run_dir.name}-control-{name}"
    if not base.exists():
        return base
    n = 2
    while (run_dir.parent / f"{base.name}-v{n}").exists():
        n += 1
    return run_dir.parent / f"{base.name}-v{n}"


def _write_control(
    run_dir: Path,
    name: str,
    run: RunData,
    judge,
    retrievals: list[Retrieval],
    judgments: list[Judgment],
    result: dict[str, Any],
    text: str,
) -> Path:
    """Assemble the control folder in a temp folder, then rename it into place (never overwrites)."""
    final = control_dir(run_dir, name)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=run_dir.parent))
    try:
        original = run.header
        if original is None:
            raise BadInput(f"{run_dir}: not a run folder (no RUN.json)")
        meta = Run(
            schema_version=original.schema_version,
            instance_id=original.instance_id,
            instance_seal=original.instance_seal,
            system=original.system,
            frozen_path=original.frozen_path,
            frozen_seal=original.frozen_seal,
            retriever=original.retriever,
            run_id=final.name,
            judge=RunJudge(
                spec=result["judge_spec"], **judge.info().model_dump(mode="json"), settings=judge.settings()
            ),
            control=ControlOf(kind=result["kind"], of_run=str(run_dir), of_run_id=original.run_id),
            n_questions=len(judgments),
            created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        )
        write_jsonl(tmp / "retrieval.jsonl", [r.model_dump(mode="json") for r in retrievals])
        write_jsonl(tmp / "judgments.jsonl", [j.model_dump(mode="json") for j in judgments])
        write_output(tmp / "control.json", ControlReport, result)
        atomic_write_text(tmp / "control.md", text)
        RunFolder(tmp).write_run(meta)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    result["out"] = str(final)
    return final


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.1f}%"


# --------------------------------------------------------------------------- the controls


def _judge_for(run: RunData, ws: Workspace, judge_spec: str | None, judge: Judge | None) -> tuple[Judge, str]:
    """The judge object and its spec: a ready ``judge``, else ``judge_spec``, else the run's own judge."""
    from backtest.judge import get_judge

    if judge is not None:
        return judge, judge_spec or judge.name
    spec = judge_spec or run_judge_spec(run)
    return get_judge(spec, ws), spec


def control_mismatch(
    run_dir: str | Path, ws: Workspace, seed: int = 0, judge_spec: str | None = None, judge=None
) -> dict[str, Any]:
    """Judge each question against another question's documents (seeded derangement); compare
    engagement with the true pairings by a two-sided Fisher test. Writes the control folder.

    ``judge`` may pass a ready Judge object instead of ``judge_spec``.
    """
    run_dir = Path(run_dir)
    run = load_run(run_dir, ws, with_text=True)
    questions, retrievals, originals = _paired(run)
    judge, spec = _judge_for(run, ws, judge_spec, judge)
    perm = derangement(len(questions), seed)
    true_judgments = (
        originals
        if _same_judge(judge, originals)
        else judge_all(judge, [(q, r.documents) for q, r in zip(questions, retrievals)])
    )
    shown = [retrievals[p] for p in perm]
    mismatched = judge_all(judge, [(q, r.documents) for q, r in zip(questions, shown)])
    control_retrievals = [
        r.model_copy(update={"question_id": q.question_id, "shown_from": r.question_id})
        for q, r in zip(questions, shown)
    ]
    true_rate, mis_rate = engagement(true_judgments), engagement(mismatched)
    fisher = stats.fisher_exact(true_rate.k, true_rate.n, mis_rate.k, mis_rate.n)
    separated = fisher["p_value"] < SIGNIFICANT and (true_rate.rate or 0) > (mis_rate.rate or 0)
    result = {
        "schema_version": "1",
        "kind": "mismatch",
        "seed": seed,
        "judge_spec": spec,
        "judge": judge.info().model_dump(mode="json"),
        "n": len(questions),
        "true_judgments": "original run" if true_judgments is originals else "re-judged",
        "true": true_rate.model_dump(mode="json"),
        "mismatched": mis_rate.model_dump(mode="json"),
        "generosity_floor": mis_rate.rate,
        "fisher": fisher,
        "significant_at": SIGNIFICANT,
        "separated": separated,
        "pairing": [{"question_id": q.question_id, "shown_from": r.question_id} for q, r in zip(questions, shown)],
        "outcomes": {"true": _counts(true_judgments), "mismatched": _counts(mismatched)},
        "judge_stats": judge.stats(),
    }
    text = render_mismatch(result)
    _write_control(run_dir, f"mismatch-s{seed}", run, judge, control_retrievals, mismatched, result, text)
    return result


def _require_same(judge: Judge, run: RunData, spec: str, explicit: str | None) -> None:
    """Agreement with the run means nothing under another judge: refuse unless --judge was given."""
    if explicit is None and not _same_judge(judge, run.judgments):
        raise BadInput(
            f"judge {spec!r} as configured now is not the one that labelled this run "
            "(its name, prompt or config sha256 differ); pass --judge to compare anyway"
        )


def _counts(judgments: Sequence[Judgment]) -> dict[str, int]:
    out: dict[str, int] = {}
    for j in judgments:
        out[j.outcome] = out.get(j.outcome, 0) + 1
    return dict(sorted(out.items()))


def _relabel(
    run_dir: Path, run: RunData, kind: str, name: str, judge, spec: str, extra: dict[str, Any]
) -> dict[str, Any]:
    questions, retrievals, originals = _paired(run)
    again = judge_all(judge, [(q, r.documents) for q, r in zip(questions, retrievals)])
    result = {
        "schema_version": "1",
        "kind": kind,
        "judge_spec": spec,
        "judge": judge.info().model_dump(mode="json"),
        "original_judge": originals[0].judge.model_dump(mode="json"),
        **extra,
        "agreement": agreement_of(originals, again),
        "judge_stats": judge.stats(),
    }
    _write_control(run_dir, name, run, judge, list(retrievals), again, result, render_agreement(result))
    return result


def control_rerun(
    run_dir: str | Path, ws: Workspace, judge_spec: str | None = None, judge: Judge | None = None
) -> dict[str, Any]:
    """The run's judge again on the same documents, response cache off; agreement with the first run."""
    run_dir = Path(run_dir)
    run = load_run(run_dir, ws, with_text=True)
    explicit = judge_spec or (judge.name if judge is not None else None)
    judge, spec = _judge_for(run, ws, judge_spec, judge)
    _require_same(judge, run, spec, explicit)
    had_cache = judge.disable_cache()
    return _relabel(
        run_dir, run, "rerun", "rerun", judge, spec, {"cache": "disabled" if had_cache else "none (judge has no cache)"}
    )


def control_prompt(
    run_dir: str | Path, ws: Workspace, prompt: str | Path, judge_spec: str | None = None
) -> dict[str, Any]:
    """The run's LLM judge with another prompt template; agreement with the original labels."""
    from backtest.judge.llm import LLMJudge
    from backtest.judge.protocol import load_config

    run_dir = Path(run_dir)
    run = load_run(run_dir, ws, with_text=True)
    base, spec = _judge_for(run, ws, judge_spec, None)
    if not isinstance(base, LLMJudge):
        raise BadInput(f"the prompt control needs an llm judge (judges/NAME.toml); this run's judge is {base.name!r}")
    _require_same(base, run, spec, judge_spec)
    prompt_path = Path(prompt)
    if not prompt_path.is_absolute() and not prompt_path.is_file():
        prompt_path = ws.root / prompt_path
    if not prompt_path.is_file():
        raise BadInput(f"{prompt}: no such prompt template")
    config = dict(load_config(base.config_path))
    config["prompt"] = str(prompt_path.resolve())
    config["name"] = f"{base.name}+{prompt_path.stem}"
    judge = LLMJudge(config, base.config_path, ws)
    if judge.prompt_sha256 == base.prompt_sha256:
        raise BadInput(f"{prompt}: this is the prompt the run was judged with; give another one")
    extra = {
        "prompt": str(prompt_path),
        "prompt_sha256": judge.prompt_sha256,
        "original_prompt": str(base.prompt_path),
        "original_prompt_sha256": base.prompt_sha256,
    }
    return _relabel(run_dir, run, "prompt", f"prompt-{prompt_path.stem}", judge, spec, extra)


# --------------------------------------------------------------------------- text


def render_mismatch(result: dict[str, Any]) -> str:
    """The mismatch control in words."""
    t, m, f = result["true"], result["mismatched"], result["fisher"]
    verdict = (
        "the judge separates true from mismatched evidence"
        if result["separated"]
        else f"the judge does NOT separate true from mismatched evidence at p < {result['significant_at']}"
    )
    return (
        "\n".join(
            [
                f"mismatch control (seed {result['seed']}, judge {result['judge']['name']}, {result['n']} questions)",
                f"  engagement, true pairings:       {t['k']}/{t['n']} = {_pct(t['rate'])} "
                f"(95% CI {_pct(t['ci95'][0])}–{_pct(t['ci95'][1])})",
                f"  engagement, mismatched pairings: {m['k']}/{m['n']} = {_pct(m['rate'])} "
                f"(95% CI {_pct(m['ci95'][0])}–{_pct(m['ci95'][1])})",
                f"  generosity floor: {_pct(result['generosity_floor'])}",
                f"  Fisher exact (two-sided): p = {f['p_value']:.3g}, odds ratio = {f['odds_ratio']:.3g}",
                f"  {verdict}",
            ]
        )
        + "\n"
    )


def render_agreement(result: dict[str, Any]) -> str:
    """A rerun or prompt control in words."""
    a = result["agreement"]
    head = (
        f"{result['kind']} control (judge {result['judge']['name']}, {a['n']} questions"
        + (f", prompt {Path(result['prompt']).name}" if result.get("prompt") else "")
        + (f", cache {result['cache']}" if result.get("cache") else "")
        + ")"
    )
    lines = [head]
    for name in FIELDS:
        f = a[name]
        kappa = "n/a (one label only)" if f["cohen_kappa"] is None else f"{f['cohen_kappa']:.3f}"
        lines.append(
            f"  {name}: raw agreement {_pct(f['raw_agreement'])}, Cohen's kappa {kappa}, {len(f['changed'])} changed"
        )
    return "\n".join(lines) + "\n"
