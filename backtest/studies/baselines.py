"""``backtest baselines``: the reference systems on one instance, end to end.

For each reference system (``random_claims``, ``citation_leaders``,
``review_future_work``, ``direct_llm``, ``evidence_graph`` and ``evidence_graph_llm``, the
same graph with an LLM verbalizer) this generates a question
set from the instance's past corpus, freezes it (an identical frozen set is reused,
not sealed again), and scores it with one judge (``offline`` unless told otherwise).
Then it compares the runs (``compare.{md,json,html}``), counts distinct questions per
set under the ``tfidf`` and ``embedding`` rules with the perturbation audit
(``diversity/``), and ranks the systems in a pairwise arena (``arena/``).

``direct_llm`` and ``evidence_graph_llm`` need an OpenAI-compatible endpoint (``llm_base_url`` in the options);
without one it is skipped and the skip is written into ``BASELINES.json`` and printed; so is a generator
that finds nothing to ask in the past corpus (``NothingToAsk``: evidence_graph without a real tension).
Everything is seeded and cached, so a rerun reuses the frozen sets and the complete
runs and writes the same files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from backtest.core.records import write_output
from backtest.generators import REFERENCE_SYSTEMS
from backtest.studies.outputs import Baselines


def run_baselines(
    ws,
    instance_id: str,
    n: int = 125,
    seed: int = 0,
    judge_spec: str = "offline",
    generators: Sequence[str] = REFERENCE_SYSTEMS,
    options: dict[str, Any] | None = None,
    out: Path | None = None,
    diversity: bool = True,
    arena: bool = True,
    arena_judge: str = "offline",
    n_boot: int = 10_000,
    progress: bool = False,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Generate, freeze and score every generator in ``generators``; compare, diversity, arena.

    ``options`` are the generators' options (``llm_base_url``, ``llm_model``, ...). Writes
    into ``out`` (default ``results/<instance>/baselines``) and returns the summary that
    ``BASELINES.json`` holds.
    """
    from backtest.analysis.compare import compare_runs, render_markdown, write_outputs
    from backtest.generators import lacks_endpoint, run_system
    from backtest.generators.protocol import NothingToAsk
    from backtest.studies.pipeline import freeze_or_reuse, score

    options = dict(options or {})
    out = Path(out) if out else ws.results / instance_id / "baselines"
    rows: list[dict[str, Any]] = []
    for name in generators:
        if lacks_endpoint(name, options):
            reason = "no LLM endpoint configured (--llm-base-url or BACKTEST_LLM_BASE_URL)"
            log(f"{name}: skipped: {reason}")
            rows.append({"generator": name, "skipped": reason})
            continue
        log(f"{name}: generating {n} questions (seed {seed})")
        try:
            made = run_system(name, instance_id, ws, n=n, seed=seed, options=options)
        except NothingToAsk as exc:  # e.g. evidence_graph on a past corpus without a real tension
            log(f"{name}: skipped: {exc.message}")
            rows.append({"generator": name, "skipped": exc.message})
            continue
        frozen, reused = freeze_or_reuse(made["out"], instance_id, ws)
        log(
            f"{name}: {made['n_questions']} questions, "
            f"{'reusing' if reused else 'froze'} {ws.relative(frozen)}; scoring"
        )
        result = score(frozen, ws, judge_spec=judge_spec, progress=progress)
        rows.append(
            {
                "generator": name,
                "system": made["system_name"],
                "n_questions": made["n_questions"],
                "submission": ws.relative(Path(made["out"])),
                "frozen": ws.relative(frozen),
                "frozen_reused": reused,
                "run": ws.relative(result.run_dir),
                "run_status": result.status,
                "valid": result.valid,
            }
        )
    scored = [r for r in rows if "run" in r]
    summary: dict[str, Any] = {
        "schema_version": "1",
        "kind": "baselines",
        "instance": instance_id,
        "n": n,
        "seed": seed,
        "judge": judge_spec,
        "arena_judge": arena_judge if arena else None,
        "systems": rows,
    }
    if len(scored) >= 2:
        comparison = compare_runs([ws.root / r["run"] for r in scored])
        write_outputs(comparison, out)
        log(render_markdown(comparison))
        summary["compare"] = ws.relative(out / "compare.md")
        sets = _frozen_question_sets([ws.root / r["frozen"] for r in scored])
        if diversity:
            summary["diversity"] = _diversity(sets, ws, out / "diversity", log)
        if arena:
            summary["arena"] = _arena(sets, instance_id, ws, out / "arena", arena_judge, n_boot, seed, progress, log)
    else:
        log("fewer than two systems scored: no comparison, diversity or arena")
    write_output(out / "BASELINES.json", Baselines, summary)
    log(f"wrote {ws.relative(out)}/BASELINES.json")
    return summary


def _frozen_question_sets(folders: Sequence[Path]) -> dict[str, list]:
    from backtest.arena.contexts import load_question_set

    return dict(load_question_set(folder) for folder in folders)


def _diversity(sets: dict[str, list], ws, out: Path, log) -> str:
    from backtest.analysis.diversity import build_rules, diversity_study, ranked_texts, write_diversity

    rules = build_rules(["tfidf", "embedding"], cache_dir=ws.cache / "equivalence")
    report, md = diversity_study(ranked_texts(sets), rules)
    write_diversity(report, md, out)
    log(md)
    return ws.relative(out / "diversity.md")


def _arena(
    sets: dict[str, list], instance_id: str, ws, out: Path, judge: str, n_boot: int, seed: int, progress: bool, log
) -> str:
    from tqdm import tqdm

    from backtest.arena.run import arena_study, leaderboard_markdown, write_arena
    from backtest.corpus.instance import load_instance, open_past_corpus

    past = open_past_corpus(load_instance(instance_id, ws), ws)
    with tqdm(desc="arena pairs", unit=" pair", disable=not progress) as bar:
        result, contexts, _ = arena_study(
            question_sets=sets, past=past, judge=judge, root=ws.root, n_boot=n_boot, seed=seed, progress=bar
        )
    write_arena(result, contexts, out)
    log(leaderboard_markdown(result))
    return ws.relative(out / "leaderboard.md")
