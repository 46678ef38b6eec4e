"""One arena run: judge every pair in both orders, fold, fit BTD, bootstrap, report.

:func:`run_arena` returns a JSON-ready result; :func:`write_arena` writes
``arena.json``, ``cases.jsonl``, ``contexts.jsonl`` and ``leaderboard.md`` into a
folder; :func:`leaderboard_markdown` renders the table that the CLI prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, NotRequired, Required, Sequence, TypedDict

from backtest.arena.bootstrap import DEFAULT_REPLICATES, BootstrapSummary, bootstrap_btd
from backtest.arena.btd import (
    DEFAULT_RIDGE,
    BTDFit,
    BTDSummary,
    Condorcet,
    WinRates,
    condorcet,
    fit_btd,
    table_from_outcomes,
    win_rates,
)
from backtest.arena.contexts import ArenaContext
from backtest.arena.outputs import ArenaReport
from backtest.arena.pairwise import SHARES, ArenaCase, PairwiseJudge, PairwiseJudgeInfo, fold_cases, judge_contexts
from backtest.arena.rubric import RubricReport
from backtest.core.fileio import atomic_write_text, write_jsonl
from backtest.core.records import write_output

SCHEMA_VERSION = "1"


class FittedCases(TypedDict):
    """:func:`fit_cases`: the fit's JSON-ready parts (``bootstrap`` only when replicates were asked for)."""

    btd: BTDSummary
    win_rates: WinRates
    condorcet: Condorcet
    bootstrap: NotRequired[BootstrapSummary]


class Refit(TypedDict):
    """One refit of :func:`sensitivity`."""

    ratings: dict[str, float]
    theta: float
    ordering: list[str]
    same_ordering_as_strict: bool


class Sensitivity(TypedDict):
    """:func:`sensitivity`: the order-sensitive cases refitted as ties, and as losses for the higher-ranked."""

    as_ties: Refit
    as_losses_for_higher_ranked: Refit


class LeaderboardRow(TypedDict):
    """One row of ``result["leaderboard"]`` (``arena.json``'s :class:`~backtest.arena.outputs.ArenaRating`)."""

    rank: int
    system: str
    rating: float
    ci_low: float | None
    ci_high: float | None
    win_rate: float | None


class ArenaInputs(TypedDict):
    """What ``backtest arena`` was given (the CLI adds it to the result)."""

    sets: list[str]
    contexts_file: str | None
    instance: str | None
    threshold: float
    cluster: bool
    seed: int


class ArenaResult(FittedCases, total=False):
    """:func:`run_arena`'s result: ``arena.json`` (:class:`~backtest.arena.outputs.ArenaReport`) plus ``cases``,
    the ArenaCase list (not JSON). ``order_sensitive`` and ``sensitivity`` come with ``fold="strict"``,
    ``rubric`` with a rubric scorer, ``judge_validity`` and ``inputs`` from :func:`arena_study` and the CLI."""

    schema_version: Required[str]
    kind: Required[str]
    judge: Required[PairwiseJudgeInfo]
    fold: Required[str]
    systems: Required[list[str]]
    n_contexts: Required[int]
    n_cases: Required[int]
    n_judgments: Required[int]
    n_fitted: Required[int]
    n_consistent: Required[int]
    consistency_rate: Required[float | None]
    position_a_share: Required[float | None]
    ridge: Required[float]
    all_fitted_ties: Required[bool]
    order_sensitive: list[dict[str, Any]]
    sensitivity: Sensitivity
    leaderboard: Required[list[LeaderboardRow]]
    rubric: RubricReport
    cases: Required[list[ArenaCase]]
    judge_validity: str
    inputs: ArenaInputs


def _outcomes(cases: Sequence[ArenaCase]) -> list[tuple[str, str, float]]:
    return [(c.system_a, c.system_b, c.share) for c in cases]


def fit_cases(
    systems: Sequence[str],
    cases: Sequence[ArenaCase],
    ridge: float = DEFAULT_RIDGE,
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    cluster: bool = False,
) -> tuple[FittedCases, BTDFit]:
    """BTD fit, win rates, Condorcet relations and the bootstrap for a list of folded cases; and the fit."""
    outcomes = _outcomes(cases)
    table = table_from_outcomes(systems, outcomes)
    fit = fit_btd(table, ridge=ridge)
    out = FittedCases(btd=fit.to_dict(), win_rates=win_rates(table), condorcet=condorcet(table))
    if n_boot > 0:
        boot = bootstrap_btd(
            systems,
            outcomes,
            fit,
            clusters=[c.context_id for c in cases] if cluster else None,
            n_boot=n_boot,
            seed=seed,
            ridge=ridge,
        )
        out["bootstrap"] = boot.to_dict()
    return out, fit


def sensitivity(
    systems: Sequence[str],
    stable: Sequence[ArenaCase],
    sensitive: Sequence[ArenaCase],
    strict_fit: BTDFit,
    ridge: float = DEFAULT_RIDGE,
) -> Sensitivity:
    """Refit with the order-sensitive cases added back as ties, and as losses for the higher-ranked system."""
    rating = strict_fit.rating_of()
    as_ties = [c.model_copy(update={"share": 0.5}) for c in sensitive]
    as_losses = []
    for c in sensitive:
        ra, rb = rating[c.system_a], rating[c.system_b]
        share = 0.5 if abs(ra - rb) < 1e-9 else (0.0 if ra > rb else 1.0)
        as_losses.append(c.model_copy(update={"share": share}))

    def refit(extra: list[ArenaCase]) -> Refit:
        fit = fit_btd(table_from_outcomes(systems, _outcomes(list(stable) + extra)), ridge=ridge)
        return Refit(
            ratings={s: round(r, 2) for s, r in fit.rating_of().items()},
            theta=round(fit.theta, 6),
            ordering=fit.ordering(),
            same_ordering_as_strict=fit.ordering() == strict_fit.ordering(),
        )

    return Sensitivity(as_ties=refit(as_ties), as_losses_for_higher_ranked=refit(as_losses))


def run_arena(
    contexts: Sequence[ArenaContext],
    judge: PairwiseJudge,
    fold: str = "average",
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    cluster: bool = False,
    ridge: float = DEFAULT_RIDGE,
    rubric=None,
    progress: Callable[[int], None] | None = None,
    cases: Sequence[ArenaCase] | None = None,
) -> ArenaResult:
    """Judge (unless ``cases`` are given), fold, fit, bootstrap; return the result dict.

    ``result["cases"]`` holds the ArenaCase list (not JSON); everything else is JSON-ready.
    """
    systems = sorted({s for ctx in contexts for s in ctx.outputs})
    if cases is None:
        cases = judge_contexts(contexts, judge, progress=progress)
    included, set_aside = fold_cases(cases, fold)
    fitted, fit = fit_cases(systems, included, ridge=ridge, n_boot=n_boot, seed=seed, cluster=cluster)
    n_cases = len(cases)
    n_consistent = sum(c.consistent for c in cases)
    position_a = (sum(SHARES[c.verdict_ab] + SHARES[c.verdict_ba] for c in cases) / (2 * n_cases)) if n_cases else None
    result: ArenaResult = {
        "schema_version": SCHEMA_VERSION,
        "kind": "arena",
        "judge": judge.info(),
        "fold": fold,
        "systems": systems,
        "n_contexts": len(contexts),
        "n_cases": n_cases,
        "n_judgments": 2 * n_cases,
        "n_fitted": len(included),
        "n_consistent": n_consistent,
        "consistency_rate": round(n_consistent / n_cases, 6) if n_cases else None,
        "position_a_share": None if position_a is None else round(position_a, 6),
        "ridge": ridge,
        "all_fitted_ties": bool(included) and all(abs(c.share - 0.5) < 1e-12 for c in included),
        **fitted,
        "leaderboard": _leaderboard_rows(fitted),
        "cases": list(cases),
    }
    if fold == "strict":
        result["order_sensitive"] = [c.model_dump(mode="json") for c in set_aside]
        result["sensitivity"] = sensitivity(systems, included, set_aside, fit, ridge=ridge)
    if rubric is not None:
        from backtest.arena.rubric import rubric_report

        result["rubric"] = rubric_report(contexts, rubric)
    return result


def _leaderboard_rows(fitted: FittedCases) -> list[LeaderboardRow]:
    btd = fitted["btd"]
    intervals = fitted["bootstrap"]["intervals"] if "bootstrap" in fitted else {}
    rows = []
    counts = fitted["win_rates"]["overall"]
    ratings = btd["ratings"]
    for s in btd["ordering"]:
        interval = intervals.get(s)
        rank = 1 + sum(r > ratings[s] + 0.005 for r in ratings.values())  # equal ratings share a rank
        rows.append(
            LeaderboardRow(
                rank=rank,
                system=s,
                rating=btd["ratings"][s],
                ci_low=interval[0] if interval else None,
                ci_high=interval[1] if interval else None,
                win_rate=counts.get(s),
            )
        )
    return rows


def ordering_text(ratings: dict[str, float], ordering: Sequence[str]) -> str:
    """``a > b = c``: the ordering with equal ratings (within 0.005) joined by ``=``."""
    text = ordering[0] if ordering else ""
    for prev, cur in zip(ordering, ordering[1:]):
        text += (" = " if abs(ratings[prev] - ratings[cur]) < 0.005 else " > ") + cur
    return text


def leaderboard_markdown(result: ArenaResult) -> str:
    """The leaderboard as a Markdown table, with θ, consistency and ordering recovery underneath."""
    boot = result.get("bootstrap")
    level = int(round(100 * boot["level"])) if boot else 95
    lines = [f"| rank | system | rating | {level}% interval | win rate |", "|---:|---|---:|---|---:|"]
    for row in result["leaderboard"]:
        ci = f"[{row['ci_low']:.0f}, {row['ci_high']:.0f}]" if row["ci_low"] is not None else "—"
        wr = f"{row['win_rate']:.3f}" if row["win_rate"] is not None else "—"
        lines.append(f"| {row['rank']} | {row['system']} | {row['rating']:.0f} | {ci} | {wr} |")
    btd = result["btd"]
    if result.get("all_fitted_ties"):
        theta = "∞ (every fitted comparison is a tie; the fit reports the weak prior's cap)"
    else:
        theta = f"{btd['theta']:.3f}" + (
            f" [{boot['theta_interval'][0]:.3f}, {boot['theta_interval'][1]:.3f}]" if boot else ""
        )
    notes = [
        f"BTD fit on {result['n_fitted']} of {result['n_cases']} cases ({result['n_contexts']} contexts, "
        f"{result['n_judgments']} judgments, fold={result['fold']}); θ = {theta}; Elo-like scale anchored at 1500."
    ]
    if result["consistency_rate"] is not None:
        notes.append(
            f"Order-consistent cases: {result['n_consistent']}/{result['n_cases']} "
            f"({100 * result['consistency_rate']:.1f}%); share given to position A: {result['position_a_share']:.3f}."
        )
    if boot:
        rec = boot["full_ordering_recovery"]
        notes.append(
            f"Bootstrap: {boot['n_boot']} replicates over {boot['resampling']} (seed {boot['seed']}); "
            + (
                f"full ordering recovered in {100 * rec:.1f}% of replicates."
                if rec is not None
                else "the point estimate ties systems, so there is no full ordering to recover."
            )
        )
    if result.get("judge_validity"):
        notes.append(f"Pairwise {result['judge_validity']}.")
    cond = result["condorcet"]
    notes.append(
        f"Condorcet winner: {cond['winner'] or 'none'}; loser: {cond['loser'] or 'none'}; "
        f"majority cycles: {len(cond['cycles'])}."
    )
    if "sensitivity" in result:
        sens = result["sensitivity"]
        notes.append(
            f"Order-sensitive cases set aside: {len(result['order_sensitive'])}; refit as ties → "
            f"{ordering_text(sens['as_ties']['ratings'], sens['as_ties']['ordering'])}; as losses for the "
            f"higher-ranked → {ordering_text(sens['as_losses_for_higher_ranked']['ratings'], sens['as_losses_for_higher_ranked']['ordering'])}."  # noqa: E501
        )
    return "\n".join(lines) + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def rubric_markdown(rubric: RubricReport) -> str:
    """Rubric diagnostics as a Markdown table."""
    lines = [
        f"Rubric diagnostics ({rubric['scorer']}; 1–5):",
        "",
        "| system | n | g | ℓ | j | Q_pair | b | d | u | Q_set |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s, r in rubric["systems"].items():
        st = r["set"]
        d = "—" if st["distinctness"] is None else f"{st['distinctness']:.2f}"
        lines.append(
            f"| {s} | {r['n_outputs']} | {r['grounding']:.2f} | {r['insight']:.2f} | {r['justification']:.2f} | "
            f"{r['q_pair']:.2f} | {st['breadth']:.2f} | {d} | {st['utility']:.2f} | {r['q_set']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def write_arena(result: ArenaResult, contexts: Sequence[ArenaContext], out_dir: str | Path) -> Path:
    """Write arena.json, cases.jsonl, contexts.jsonl and leaderboard.md into ``out_dir``."""
    out = Path(out_dir)
    data = {k: v for k, v in result.items() if k != "cases"}
    write_output(out / "arena.json", ArenaReport, data)
    write_jsonl(out / "cases.jsonl", [c.model_dump(mode="json") for c in result["cases"]])
    write_jsonl(out / "contexts.jsonl", [c.model_dump(mode="json") for c in contexts])
    md = "# Arena leaderboard\n\n" + leaderboard_markdown(result)
    if "rubric" in result:
        md += "\n" + rubric_markdown(result["rubric"])
    atomic_write_text(out / "leaderboard.md", md)
    return out


def arena_study(
    contexts: Sequence[ArenaContext] | None = None,
    question_sets: dict | None = None,
    past=None,
    judge: str = "offline",
    root: Path | None = None,
    fold: str = "average",
    n_boot: int = DEFAULT_REPLICATES,
    seed: int = 0,
    cluster: bool = False,
    threshold: float = 0.15,
    ridge: float = DEFAULT_RIDGE,
    rubric: str = "offline",
    rubric_config: Path | None = None,
    progress=None,
) -> tuple[ArenaResult, list[ArenaContext], str]:
    """One arena as ``backtest arena`` runs it: contexts, pairwise judge, fit, rubric.

    Give either ``contexts`` (user-provided) or ``question_sets`` (system → Questions,
    grouped into shared past-evidence neighbourhoods; ``past`` supplies evidence text).
    ``judge`` is a pairwise judge spec (``offline``, ``position-a``, ``judges/NAME.toml``);
    ``progress`` is a tqdm-like bar (its total is set here). Returns the result, the
    contexts with two or more systems, and the run id (a hash of everything that
    decides the result).
    """
    from backtest.arena.contexts import neighbourhood_contexts
    from backtest.arena.pairwise import get_pairwise_judge
    from backtest.arena.rubric import get_rubric
    from backtest.core.errors import BadInput
    from backtest.core.seal import sha256_json

    if contexts is None:
        contexts = neighbourhood_contexts(question_sets or {}, past, threshold=threshold)
    multi = [c for c in contexts if len(c.outputs) >= 2]
    if not multi:
        raise BadInput("no context holds outputs of two systems: nothing to compare (try a lower --threshold)")
    pairwise = get_pairwise_judge(judge, root=root)
    scorer = None if rubric == "none" else get_rubric(rubric, **({"config": rubric_config} if rubric_config else {}))
    if progress is not None:
        progress.total = sum(len(c.outputs) * (len(c.outputs) - 1) // 2 for c in multi)
        progress.refresh()
    result = run_arena(
        multi,
        pairwise,
        fold=fold,
        n_boot=n_boot,
        seed=seed,
        cluster=cluster,
        ridge=ridge,
        rubric=scorer,
        progress=None if progress is None else progress.update,
    )
    run_id = sha256_json(
        {
            "contexts": [c.model_dump(mode="json") for c in multi],
            "judge": result["judge"],
            "fold": fold,
            "n_boot": n_boot,
            "seed": seed,
            "cluster": cluster,
            "ridge": ridge,
            "rubric": rubric,
        }
    )[:12]
    if root is not None:
        from backtest.judge.cards import validity_line

        result["judge_validity"] = validity_line(Path(root) / "judges" / "cards", result["judge"], pairwise=True)
    return result, multi, run_id
