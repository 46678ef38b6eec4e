"""``backtest estimate``: label-grounded rates, per run, from the judge's labels and careful reading's.

A run's judge labelled all of its ``N`` questions; careful reading labelled a simple random sample of them
(``backtest annotate export --per-run``, whose ``decode.json`` records the design). For each rate below the
two are combined by prediction-powered inference (PPI++ with a power-tuned weight, per run:
:mod:`backtest.core.ppi`), which is unbiased whatever the judge's quality. Beside each estimate stand the
judge-only rate (all ``N``), the labels-only rate (the sample), and the judge's kappa against the readers on
that run's sample. Differences between runs come with a 95% interval and a two-sided p-value, Holm-corrected
across the pairs of runs (per rate).

**The readers' label** of an item is the adjudicated one when the export folder holds
``labels/adjudicated.jsonl``; else, for each rate, the share of readers who gave it (two readers who split
give 0.5: PPI takes any value in [0, 1], and the estimate is then of the average reader). Disagreements
without adjudication are counted and reported.

**Rates** (each an indicator per question; ``coverage`` is the headline): ``coverage`` (any engaged outcome),
``answered``, ``partially_addressed``, ``posed_but_open``, ``premise_refuted``, ``premise_supported``,
``premise_weakened``.

**Nothing in an export is taken on trust**: before a label counts, the sample is drawn again from its seed and
the runs, and every read item is compared with what its run showed the judge
(:mod:`backtest.analysis.reading.sample`); labels must cite what their item showed, and adjudicated labels must
follow from the readers' (:func:`~backtest.analysis.reading.annotate.check_adjudicated`). A judge fitted on
a run's read items (``Judge.trained_on``), or one that cannot be asked, is not used for that run: lambda 0, the
readers' labels alone, with a note.

**A collapsed judge** is flagged per run: one that puts more than 90% of the run on one outcome label, or
never uses an outcome label that the readers used on the run's sample.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from backtest.analysis.outputs import Decode, SampleDesign
from backtest.analysis.reading.annotate import ADJUDICATED, check_adjudicated
from backtest.analysis.reading.items import AnnotationItem, Label, citation_problems, read_items, read_labels
from backtest.analysis.reading.sample import RunMaterial, verify_draws
from backtest.core.errors import BadInput, CheckFailed
from backtest.core.ppi import PPIRate, ppi_rate, rate_difference
from backtest.core.records import ENGAGED_OUTCOMES, OUTCOMES, Judgment, Output, read_output
from backtest.core.runs import Run
from backtest.core.stats import adjust_pvalues, cohen_kappa
from backtest.core.workspace import Workspace
from backtest.scoring.metrics import collapse_flags
from backtest.validity.runfolder import RunFolder

HEADLINE = "coverage"


def _outcome_is(label: str) -> Callable[[Any], bool]:
    return lambda r: r.outcome == label


def _premise_is(label: str) -> Callable[[Any], bool]:
    return lambda r: r.premise_status == label


RATES: dict[str, Callable[[Any], bool]] = {
    "coverage": lambda r: r.outcome in ENGAGED_OUTCOMES,
    "answered": _outcome_is("answered"),
    "partially_addressed": _outcome_is("partially_addressed"),
    "posed_but_open": _outcome_is("posed_but_open"),
    "premise_refuted": _premise_is("refuted"),
    "premise_supported": _premise_is("supported"),
    "premise_weakened": _premise_is("weakened"),
}


# --------------------------------------------------------------------------- records


class RateEstimate(BaseModel):
    """One rate of one run: the published estimate and interval and what they rest on."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    estimate: float
    ci95: tuple[float, float]
    n: int
    n_labelled: int
    effective_n: float
    lambda_: float = Field(alias="lambda")
    judge_only: float
    labels_only: float
    labels_only_ci95: tuple[float, float]
    kappa: float | None  # the judge against the readers' consensus on this run's sample (binary, this rate)
    method: str
    disagreements: int  # sampled items on which readers split on this rate with no adjudication


class ReaderTime(BaseModel):
    """What the careful reading behind one run's grounded rates cost, from the seconds the reading desk records
    (``annotate serve``): every reader's label on the run's sampled items (the derived adjudicated labels not
    counted) and every adjudication decision on them."""

    model_config = ConfigDict(extra="forbid")

    labels: int  # readers' labels on the run's sampled items
    timed: int  # of them, those that carry their seconds
    decisions: int  # adjudication decisions on those items
    seconds: float  # the timed labels' and decisions' seconds, summed
    hours: float | None  # seconds / 3600 when every label is timed; None when some were given without a time


class RunEstimate(BaseModel):
    """The label-grounded rates of one run."""

    model_config = ConfigDict(extra="forbid")

    run: str
    system: str
    instance: str
    judge: str
    labels: str  # the export folder whose readers' labels were used
    readers: list[str]
    adjudicated: bool
    rates: dict[str, RateEstimate]
    judge_outcomes: dict[str, int]  # the judge's outcome labels over the run
    reader_outcomes: dict[str, float]  # the readers' outcome labels over the sample (shares when split)
    flags: list[str]  # a collapsed judge (module docstring)
    notes: list[str] = []  # why the judge's labels were not used (a judge fitted on the sample): lambda 0
    reading: ReaderTime | None = None  # the reader-hours these rates cost (None only in reports made before)


class Difference(BaseModel):
    """One rate of run a minus run b."""

    model_config = ConfigDict(extra="forbid")

    rate: str
    a: str
    b: str
    difference: float
    ci95: tuple[float, float]
    p_value: float
    p_holm: float


class EstimateReport(Output):
    """``backtest estimate --json``: the runs' label-grounded rates and their pairwise differences."""

    runs: list[RunEstimate]
    differences: list[Difference]


# --------------------------------------------------------------------------- labels


@dataclass
class LabelSet:
    """One annotation export with its readers' labels: its design, its items and, per item, each reader's Label.

    Its sample is checked against the runs it drew from (:func:`~backtest.analysis.reading.sample.verify_draws`)
    the first time a run of it is estimated in a workspace (:meth:`runs`)."""

    folder: Path
    decode: Decode
    design: SampleDesign
    readers: dict[str, dict[str, Label]]  # reader -> item id -> label (``adjudicated`` alone when present)
    adjudicated: bool
    items: dict[str, AnnotationItem]
    checked: dict[Path, dict[str, RunMaterial]] = field(default_factory=dict)
    judges: dict[tuple[str, Path], Any] = field(default_factory=dict)  # (spec, root) -> (Judge, info) or BadInput

    def items_of(self, run: str) -> dict[str, str]:
        """question id -> item id of the items drawn from ``run``."""
        return {src.question_id: item for item, src in self.decode.items.items() if src.run == run}  # type: ignore[union-attr]

    def voters(self) -> list[dict[str, Label]]:
        """The labels that count: the adjudicated ones when there are, else every reader's."""
        return [self.readers[ADJUDICATED]] if self.adjudicated else list(self.readers.values())

    def runs(self, ws: Workspace) -> dict[str, RunMaterial]:
        """The runs this export drew from, in ``ws``, once its sample, item mapping and items are checked
        against them (BadInput or CheckFailed, one line, otherwise)."""
        key = ws.root.resolve()
        if key not in self.checked:
            self.checked[key] = verify_draws(self.folder, self.decode, self.items, ws)
        return self.checked[key]


def load_label_set(folder: str | Path) -> LabelSet:
    """An export folder (``decode.json``, ``items.jsonl``, ``labels/*.jsonl``) ready to estimate from; BadInput,
    one line, for a folder that is not one, has no readers' labels, or records a design an estimate cannot use;
    CheckFailed for labels that do not follow from what their items showed (a citation of a document never
    shown, an engaged label citing nothing) or adjudicated labels that do not follow from the readers'."""
    folder = Path(folder)
    if not (folder / "decode.json").is_file():
        raise BadInput(f"{folder}: no decode.json (give the folder `backtest annotate export` wrote)")
    decode = read_output(Decode, folder / "decode.json")
    if decode.kind != "items":
        raise BadInput(f"{folder}: an export of arena pairs; estimates need (question, documents) items")
    if decode.design is None:
        if decode.no_design:
            raise BadInput(f"{folder}: its decode.json records no sampling design: {decode.no_design}")
        raise BadInput(
            f"{folder}: its decode.json records no sampling design (exported before designs were recorded); "
            "export a sample with `backtest annotate export --per-run N`"
        )
    if decode.design.kind != "srs":
        raise BadInput(
            f"{folder}: its items were drawn stratified by the judge's outcome, not as a simple random sample of "
            "each run; an estimate from them would need the strata weights of each rate (not supported): export "
            "with --per-run N and no --stratify"
        )
    files = sorted((folder / "labels").glob("*.jsonl")) if (folder / "labels").is_dir() else []
    if not files:
        raise BadInput(f"{folder}: no readers' labels (labels/*.jsonl; add them with `backtest annotate import`)")
    if not (folder / "items.jsonl").is_file():
        raise CheckFailed(
            f"{folder}: items.jsonl is missing, so the labels cannot be checked against what their readers were "
            "shown; restore it (or export a new sample)"
        )
    items = {item.item_id: item for item in read_items(folder / "items.jsonl")}
    if set(items) != set(decode.items):
        odd = sorted(set(items) ^ set(decode.items))
        raise CheckFailed(f"{folder}: items.jsonl and decode.json hold different items (first: {odd[0]})")
    readers = {p.stem: {lab.item_id: lab for lab in read_labels(p)} for p in files}
    for name, labels in readers.items():
        unknown = sorted(set(labels) - set(decode.items))
        if unknown:
            raise BadInput(
                f"{folder}/labels/{name}.jsonl: labels for items not in the export: {', '.join(unknown[:5])}"
            )
        for item, label in labels.items():
            wrong = citation_problems(label.outcome, label.cited, [d.id for d in items[item].documents])
            if wrong:
                raise CheckFailed(f"{folder}/labels/{name}.jsonl: {item}: {wrong[0]}; such a label is not counted")
    check_adjudicated(folder)
    return LabelSet(folder, decode, decode.design, readers, ADJUDICATED in readers, items)


def discover_label_sets(ws: Workspace) -> list[Path]:
    """The export folders under ``judges/validation/`` that can ground estimates: a simple random sample design
    and readers' labels (what ``leaderboard --all`` uses when no ``--labels`` is given). A folder that is such
    an export but fails its checks stops the discovery with its one line: it is never left out silently."""
    from backtest.analysis.reading.intelligibility import READING_KINDS
    from backtest.core.fileio import read_json

    found = []
    for path in sorted((ws.judges / "validation").glob("*/decode.json")):
        raw = read_json(path)
        if isinstance(raw, dict) and raw.get("kind") in READING_KINDS:
            continue  # a reading of questions' intelligibility: no sample of runs' items, nothing to ground
        decode = read_output(Decode, path)
        has_labels = any((path.parent / "labels").glob("*.jsonl"))
        if decode.kind != "items" or decode.design is None or decode.design.kind != "srs" or not has_labels:
            continue
        load_label_set(path.parent)
        found.append(path.parent)
    return found


def _reader_values(
    label_set: LabelSet, item_ids: Sequence[str], test: Callable[[Any], bool]
) -> tuple[list[float], int, list[bool | None]]:
    """Per item, the readers' value of one rate (adjudicated, else the share of readers), how many items split,
    and the consensus as a yes/no (None where readers tie) for kappa."""
    values, split, decided = [], 0, []
    for item in item_ids:
        votes = [test(r[item]) for r in label_set.voters() if item in r]
        share = sum(votes) / len(votes)
        values.append(share)
        split += 0 < share < 1
        decided.append(None if share == 0.5 else share > 0.5)
    return values, split, decided


# --------------------------------------------------------------------------- runs


def _run_judgments(run_dir: Path) -> tuple[Run, list[Judgment]]:
    folder = RunFolder.open(run_dir)
    if folder.run.status != "complete" or not folder.has("judgments.jsonl"):
        raise BadInput(f"{run_dir}: run is not complete; finish it with backtest score")
    folder.check_seal()  # a finished run's files as they were sealed, as compare and report read them
    return folder.run, folder.judgments


def _label_set_for(run: str, label_sets: Sequence[LabelSet]) -> LabelSet | None:
    found = [s for s in label_sets if run in s.design.runs]
    if len(found) > 1:
        raise BadInput(f"{run}: sampled in more than one --labels folder ({', '.join(str(s.folder) for s in found)})")
    return found[0] if found else None


def run_folder(run_dir: str | Path, ws: Workspace) -> tuple[Path, Workspace]:
    """A run folder as given (relative to the current directory, else to the root) and the workspace that names
    it: ``ws`` when the run lies in its results/, else the run's own (``ROOT/results/<instance>/<system>/<run>``),
    so an absolute path from anywhere finds the sample that names the run relative to its root."""
    run_dir = Path(run_dir)
    if not run_dir.is_absolute() and not run_dir.exists():
        run_dir = ws.root / run_dir
    parents = run_dir.resolve().parents
    if not ws.relative(run_dir).startswith("results/") and len(parents) > 3 and parents[2].name == "results":
        ws = Workspace.of_run(run_dir)
    return run_dir, ws


def trained_on_note(
    run: Run, items: Sequence[AnnotationItem], ws: Workspace, cache: dict[tuple[str, Path], Any] | None = None
) -> str | None:
    """Why the judge's labels must not ground this run's sample, or None: the judge that labelled the run was
    fitted on some of the read ``items`` (:meth:`~backtest.judge.protocol.Judge.trained_on`), or it cannot be
    asked (its config is not here, or is not the one the run recorded). PPI needs a judge not fitted on the
    sample: with a note the estimate takes lambda 0, the readers' labels alone. ``cache``: judges already
    loaded, by (spec, root)."""
    from backtest.judge import get_judge

    spec = run.judge.spec or run.judge.name
    alone = "lambda 0: the estimate is the readers' labels alone"
    cache = {} if cache is None else cache
    key = (spec, ws.root.resolve())
    if key not in cache:
        try:
            judge = get_judge(spec or None, ws)
            cache[key] = (judge, judge.info())
        except BadInput as exc:
            cache[key] = exc
    if isinstance(cache[key], BadInput):
        why = f"the judge that labelled this run ({spec}) cannot be loaded to ask what it was fitted on ({cache[key]})"
        return f"{why}; {alone}"
    judge, info = cache[key]
    recorded = run.judge.config_sha256
    if recorded and info.config_sha256 != recorded:
        return (
            f"judge {spec} as configured here is not the one that labelled this run (its config sha256 differs), so "
            f"what that judge was fitted on is unknown; {alone}"
        )
    fitted = sum(judge.trained_on(items))
    if fitted:
        return (
            f"the judge ({spec}) was fitted on {fitted} of the {len(items)} read items of this run, and PPI needs a "
            f"judge not fitted on its sample; {alone}"
        )
    return None


def estimate_run(run_dir: str | Path, label_sets: Sequence[LabelSet], ws: Workspace) -> RunEstimate | None:
    """The label-grounded rates of one run, or None when no label set sampled it. The label set's sample is
    checked against the runs first (:meth:`LabelSet.runs`)."""
    run_dir, ws = run_folder(run_dir, ws)
    name = ws.relative(run_dir)
    label_set = _label_set_for(name, label_sets)
    if label_set is None:
        return None
    material = label_set.runs(ws)[name]
    run, by_q = material.run, material.judgments
    judgments = list(by_q.values())
    sample = label_set.design.runs[name]
    if not sample.sampled:
        raise BadInput(
            f"{name}: its sample in {label_set.folder} is empty (no question of the run was judged); there is "
            "nothing read to ground a rate on"
        )
    items = label_set.items_of(name)
    missing = [q for q in sample.sampled if q not in items]
    voters = label_set.voters()
    unlabelled = [items[q] for q in sample.sampled if q in items and not any(items[q] in r for r in voters)]
    if missing or unlabelled:
        raise BadInput(
            f"{name}: {len(missing) + len(unlabelled)} sampled question(s) have no reader's label in "
            f"{label_set.folder} (first: {(missing + unlabelled)[0]}); an estimate needs the whole sample read"
        )
    sampled = list(sample.sampled)
    item_ids = [items[q] for q in sampled]
    note = trained_on_note(run, [label_set.items[i] for i in item_ids], ws, label_set.judges)
    in_sample = set(sampled)
    others = [j for j in judgments if j.question_id not in in_sample]
    rates = {}
    for rate, test in RATES.items():
        y, split, decided = _reader_values(label_set, item_ids, test)
        f_l = [float(test(by_q[q])) for q in sampled]
        f_u = [float(test(j)) for j in others]
        pr = ppi_rate(y, f_l, f_u, judge_excluded="the judge may have been fitted on the sample" if note else None)
        pairs = [(bool(f), d) for f, d in zip(f_l, decided) if d is not None]
        kappa = cohen_kappa([p[0] for p in pairs], [p[1] for p in pairs]) if pairs else float("nan")
        rates[rate] = _rate_record(pr, None if kappa != kappa else kappa, split if not label_set.adjudicated else 0)
    judge_outcomes = Counter(j.outcome for j in judgments)
    reader_outcomes: dict[str, float] = {}
    for item in item_ids:
        votes = [r[item].outcome for r in voters if item in r]
        for v in votes:
            reader_outcomes[v] = reader_outcomes.get(v, 0.0) + 1 / len(votes)
    return RunEstimate(
        run=name,
        system=run.system,
        instance=run.instance_id,
        judge=run.judge.name,
        labels=ws.relative(label_set.folder),
        readers=sorted(label_set.readers),
        adjudicated=label_set.adjudicated,
        rates=rates,
        judge_outcomes={o: judge_outcomes.get(o, 0) for o in OUTCOMES},
        reader_outcomes={o: round(reader_outcomes.get(o, 0.0), 4) for o in OUTCOMES},
        flags=collapse_flags(dict(judge_outcomes), reader_outcomes),
        notes=[note] if note else [],
        reading=reader_time(label_set, item_ids),
    )


def reader_time(label_set: LabelSet, item_ids: Sequence[str]) -> ReaderTime:
    """The reading of ``item_ids`` in ``label_set``: labels, timed labels, adjudication decisions, seconds."""
    from backtest.core.fileio import iter_jsonl

    wanted = set(item_ids)
    labels = [
        lab for name, r in label_set.readers.items() if name != ADJUDICATED for i, lab in r.items() if i in wanted
    ]
    timed = [lab.seconds for lab in labels if lab.seconds is not None]
    decisions = label_set.folder / "adjudication.jsonl"
    decided = [row for _, row in iter_jsonl(decisions) if row.get("item_id") in wanted] if decisions.is_file() else []
    spent = sum(timed) + sum(float(d.get("seconds") or 0.0) for d in decided)
    every = bool(labels) and len(timed) == len(labels)
    return ReaderTime(
        labels=len(labels),
        timed=len(timed),
        decisions=len(decided),
        seconds=round(spent, 1),
        hours=round(spent / 3600, 3) if every else None,
    )


def reading_line(run: RunEstimate) -> str | None:
    """One line: the reader-hours the run's grounded rates cost (or how much of the reading was timed)."""
    r = run.reading
    if r is None:
        return None
    if r.hours is not None:
        return (
            f"reading: {run.system} ({run.instance}): {r.hours:.2f} reader-hours ({r.labels} timed labels"
            f"{f', {r.decisions} adjudication decisions' if r.decisions else ''}) ground these rates"
        )
    return (
        f"reading: {run.system} ({run.instance}): {r.timed} of {r.labels} labels timed, so the reader-hours are "
        "unknown (labels imported from sheets carry no time; `backtest annotate serve` records it)"
    )


def _rate_record(pr: PPIRate, kappa: float | None, disagreements: int) -> RateEstimate:
    def r(x: float) -> float:
        return round(float(x), 6)

    return RateEstimate(
        estimate=r(pr.estimate),
        ci95=(r(pr.ci95[0]), r(pr.ci95[1])),
        n=pr.n,
        n_labelled=pr.n_labelled,
        effective_n=round(pr.effective_n, 2),
        lambda_=r(pr.lam),
        judge_only=r(pr.judge_only),
        labels_only=r(pr.labels_only),
        labels_only_ci95=(r(pr.labels_only_ci95[0]), r(pr.labels_only_ci95[1])),
        kappa=None if kappa is None else round(kappa, 4),
        method=pr.method,
        disagreements=disagreements,
    )


def _label_counts(a: RateEstimate, b: RateEstimate) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Both rates the readers' alone, in whole counts: ((k_a, n_a), (k_b, n_b)) for an exact comparison."""
    if a.lambda_ != 0 or b.lambda_ != 0:
        return None
    ks = [r.labels_only * r.n_labelled for r in (a, b)]
    if any(abs(k - round(k)) > 1e-6 for k in ks):
        return None
    return ((round(ks[0]), a.n_labelled), (round(ks[1]), b.n_labelled))


def differences(runs: Sequence[RunEstimate], rates: Sequence[str] = tuple(RATES)) -> list[Difference]:
    """Every pair of runs, for each rate: a - b with its 95% interval and p-value, Holm-corrected per rate
    (:func:`~backtest.core.ppi.rate_difference`: exact when both rates rest on the readers' labels alone)."""
    out = []
    for rate in rates:
        pairs = list(itertools.combinations(runs, 2))
        diffs = [
            rate_difference(
                (a.rates[rate].estimate, a.rates[rate].ci95),
                (b.rates[rate].estimate, b.rates[rate].ci95),
                counts=_label_counts(a.rates[rate], b.rates[rate]),
            )
            for a, b in pairs
        ]
        holm = adjust_pvalues([d.p_value for d in diffs], "holm")
        for (a, b), d, p in zip(pairs, diffs, holm):
            out.append(
                Difference(
                    rate=rate,
                    a=a.run,
                    b=b.run,
                    difference=round(d.difference, 6),
                    ci95=(round(d.ci95[0], 6), round(d.ci95[1], 6)),
                    p_value=round(d.p_value, 6),
                    p_holm=round(p, 6),
                )
            )
    return out


def check_out(out: str | Path, run_dirs: Sequence[str | Path], labels: Sequence[str | Path], ws: Workspace) -> None:
    """BadInput when ``out`` lies inside one of the runs or label folders an estimate reads: writing there would
    replace their own files (``RUN.json``, ``decode.json``) with the report."""
    target = Path(out).resolve()
    for folder in [run_folder(r, ws)[0] for r in run_dirs] + [Path(p) for p in labels]:
        if target == folder.resolve() or folder.resolve() in target.parents:
            raise BadInput(f"--out {out}: inside {folder}, which this estimate reads; write the report elsewhere")


def once(paths: Sequence[str | Path], what: str) -> None:
    """BadInput when two of ``paths`` are one folder (``RUN`` and ``./RUN``): a run compared with itself, or
    labels counted twice."""
    seen: dict[Path, str | Path] = {}
    for p in paths:
        key = Path(p).resolve()
        if key in seen:
            raise BadInput(f"{p}: the same {what} as {seen[key]}, given twice; give each once")
        seen[key] = p


def estimate_runs(
    run_dirs: Sequence[str | Path], labels: Sequence[str | Path], ws: Workspace, require_all: bool = True
) -> tuple[EstimateReport, list[str]]:
    """The report of :func:`estimate_run` over ``run_dirs``, and the runs no label set sampled (BadInput
    naming the first when ``require_all``)."""
    if not labels:
        raise BadInput("give at least one --labels folder (an annotate export with readers' labels)")
    once(labels, "--labels folder")
    once([run_folder(r, ws)[0] for r in run_dirs], "run")
    label_sets = [load_label_set(p) for p in labels]
    runs, unread = [], []
    for run_dir in run_dirs:
        est = estimate_run(run_dir, label_sets, ws)
        if est is None:
            folder, run_ws = run_folder(run_dir, ws)
            unread.append(run_ws.relative(folder))
        else:
            runs.append(est)
    if unread and require_all:
        raise BadInput(
            f"{unread[0]}: no --labels folder sampled this run (its decode.json design lists the runs it read)"
        )
    return EstimateReport(runs=runs, differences=differences(runs)), unread


# --------------------------------------------------------------------------- text


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def render_text(report: EstimateReport, rates: Sequence[str] = (HEADLINE, "answered", "premise_refuted")) -> str:
    """The report as a terminal table per rate (ranked by the estimate), then the differences of the headline."""
    lines = []
    for rate in rates:
        lines.append(f"{rate} (label-grounded, PPI++ per run; judge-only beside it, labelled as such)")
        header = (
            f"  {'system':<22} {'instance':<12} {'N':>4} {'n':>3} {'estimate':>9} {'95% interval':>17} "
            f"{'eff. n':>7} {'lambda':>6} {'judge-only':>10} {'labels-only':>11} {'kappa':>6}"
        )
        lines.append(header)
        for run in sorted(report.runs, key=lambda r: -r.rates[rate].estimate):
            e = run.rates[rate]
            kappa = "—" if e.kappa is None else f"{e.kappa:.2f}"
            lines.append(
                f"  {run.system:<22} {run.instance:<12} {e.n:>4} {e.n_labelled:>3} {_pct(e.estimate):>9} "
                f"{'[' + _pct(e.ci95[0]) + ', ' + _pct(e.ci95[1]) + ']':>17} {e.effective_n:>7.1f} "
                f"{e.lambda_:>6.2f} {_pct(e.judge_only):>10} {_pct(e.labels_only):>11} {kappa:>6}"
            )
        lines.append("")
    heads = [d for d in report.differences if d.rate == HEADLINE]
    if heads:
        lines.append(f"{HEADLINE}: differences between runs (a - b), Holm-corrected across {len(heads)} pairs")
        system = {r.run: f"{r.system} ({r.instance})" for r in report.runs}
        for d in sorted(heads, key=lambda d: d.p_holm):
            lines.append(
                f"  {system[d.a]} - {system[d.b]}: {100 * d.difference:+.1f} points "
                f"[{100 * d.ci95[0]:+.1f}, {100 * d.ci95[1]:+.1f}], p {d.p_value:.3g}, Holm {d.p_holm:.3g}"
            )
        lines.append("")
    for run in report.runs:
        if (line := reading_line(run)) is not None:
            lines.append(line)
        for note in run.notes:
            lines.append(f"warning: {run.system} ({run.instance}): {note}")
        for flag in run.flags:
            lines.append(f"warning: {run.system} ({run.instance}): {flag}")
        split = run.rates[HEADLINE].disagreements
        if split:
            lines.append(
                f"note: {run.system} ({run.instance}): readers split on {split} sampled item(s) with no adjudication "
                "(counted as the share of readers)"
            )
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- planning


class RunPlan(BaseModel):
    """How many of one run's questions to read for a coverage interval of a given half-width."""

    model_config = ConfigDict(extra="forbid")

    run: str
    system: str
    n: int  # questions in the run
    rate: float  # the coverage assumed: the pilot's labels-only rate, else the judge's
    rate_from: str
    rho: float  # the judge's correlation with the readers assumed
    rho_from: str
    n_to_read: int  # for the half-width asked
    n_labels_only: int  # the same half-width from labels alone (rho = 0)
    budget_share: int | None = None  # this run's share of the budget's items (split as evenly as can be)
    halfwidth_of_budget: float | None = None  # the half-width that share buys
    seconds_per_item: float | None = None  # the readers' median seconds an item, when the pilot's labels are timed
    seconds_from: str | None = None  # which labels that median is of
    hours_to_read: float | None = None  # n_to_read at that pace, in reader-hours


def reading_pace(label_sets: Sequence[LabelSet]) -> tuple[float, int] | None:
    """The readers' median seconds an item over every timed label of ``label_sets`` (the derived adjudicated
    labels not counted) and how many labels it is the median of; None when no label carries its seconds."""
    import statistics

    times = [
        lab.seconds
        for s in label_sets
        for name, r in s.readers.items()
        if name != ADJUDICATED
        for lab in r.values()
        if lab.seconds is not None
    ]
    return (float(statistics.median(times)), len(times)) if times else None


def _pearson(a: Sequence[float], b: Sequence[float]) -> float | None:
    import numpy as np

    if len(a) < 3 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    return float(np.corrcoef(np.asarray(a, dtype=float), np.asarray(b, dtype=float))[0, 1])


def _budget_items(items: int | None, hours: float | None, pace: tuple[float, int] | None, runs: int) -> int | None:
    """The budget in items: ``items`` as given, or ``hours`` at the readers' median seconds an item (``pace``);
    BadInput, one line, for both or neither way, hours without timed labels, or less than an item a run."""
    if items is not None and hours is not None:
        raise BadInput("give the budget in hours (--budget) or in items (--budget-items), not both")
    if hours is not None:
        if pace is None:
            raise BadInput(
                f"--budget {hours:g} is reader-hours, and no label in --labels carries the seconds its reader "
                "spent (labels read at `backtest annotate serve` do); give the budget in items with --budget-items"
            )
        if not 0 < hours < 1e6:  # NaN fails this too
            raise BadInput(f"--budget {hours} must be a positive number of hours")
        items = int(hours * 3600 // pace[0])
        if items < runs:
            raise BadInput(
                f"--budget {hours:g} h buys {items} item(s) at the readers' median {pace[0]:.0f} s an item: "
                f"less than one for each of the {runs} runs"
            )
    elif items is not None and items < runs:
        raise BadInput(f"--budget-items {items} is less than one item for each of the {runs} runs")
    return items


def plan_runs(
    run_dirs: Sequence[str | Path],
    halfwidth: float,
    ws: Workspace,
    labels: Sequence[str | Path] = (),
    budget: int | None = None,
    budget_hours: float | None = None,
) -> list[RunPlan]:
    """Per run: how many questions to read for a 95% coverage interval of ``halfwidth``
    (:func:`~backtest.core.ppi.samples_for_halfwidth`), given the judge's correlation with the readers measured on
    a pilot sample (``labels``: this run's, else pooled over the pilot's runs), else its validity card's engaged
    kappa, else none (labels alone); and what each run's share of ``budget`` items buys (split as evenly as can
    be: the shares sum to ``budget``, and less than one item per run is refused). ``budget_hours``: the budget in
    reader-hours instead, turned into items at the readers' median seconds an item on the pilot's timed labels
    (:func:`reading_pace`; refused when none is timed); every plan then says its reading in hours too."""
    from backtest.analysis.reading.sample import quotas
    from backtest.core.ppi import halfwidth_for_samples, samples_for_halfwidth
    from backtest.judge.cards import run_validity

    if not 0 < halfwidth < 1:  # a NaN fails this too
        raise BadInput(f"--halfwidth {halfwidth} must lie strictly between 0 and 1")
    label_sets = [load_label_set(p) for p in labels]
    pace = reading_pace(label_sets)
    budget = _budget_items(budget, budget_hours, pace, len(run_dirs))
    shares = quotas(budget, len(run_dirs)) if budget is not None else [None] * len(run_dirs)
    test = RATES[HEADLINE]
    pooled: tuple[list[float], list[float]] = ([], [])
    pilot: dict[str, tuple[list[float], list[float]]] = {}
    for s in label_sets:
        for run_name, sample in s.design.runs.items():
            run_dir = ws.root / run_name
            if not (run_dir / "judgments.jsonl").is_file():
                continue
            _, judgments = _run_judgments(run_dir)
            by_q = {j.question_id: j for j in judgments}
            items = s.items_of(run_name)
            qs = [q for q in sample.sampled if q in items and q in by_q and any(items[q] in r for r in s.voters())]
            y, _, _ = _reader_values(s, [items[q] for q in qs], test)
            f = [float(test(by_q[q])) for q in qs]
            pilot[run_name] = (y, f)
            pooled[0].extend(y)
            pooled[1].extend(f)
    plans = []
    for given, share in zip(run_dirs, shares):
        folder, run_ws = run_folder(given, ws)
        name = run_ws.relative(folder)
        run, judgments = _run_judgments(folder)
        judge_rate = sum(test(j) for j in judgments) / len(judgments) if judgments else 0.0
        rho, rho_from = None, ""
        if name in pilot and (r := _pearson(pilot[name][0], pilot[name][1])) is not None:
            rho, rho_from = r, f"this run's pilot sample (n={len(pilot[name][0])})"
        elif pooled[0] and (r := _pearson(*pooled)) is not None:
            rho, rho_from = r, f"the pilot samples pooled (n={len(pooled[0])})"
        else:
            card = run_validity(ws, run.judge)
            kappas = [v["engaged"]["kappa"] for v in card.validations if v.get("engaged", {}).get("kappa") is not None]
            if kappas:
                rho, rho_from = min(kappas), "the judge's validity card (lowest engaged kappa, as a correlation)"
        if rho is None:
            rho, rho_from = 0.0, "nothing measured: labels alone"
        rho = max(rho, 0.0)
        if name in pilot:
            rate, rate_from = sum(pilot[name][0]) / len(pilot[name][0]), "the pilot's labels"
        else:
            rate, rate_from = judge_rate, "the judge's labels (no pilot for this run)"
        n = len(judgments)
        plan = RunPlan(
            run=name,
            system=run.system,
            n=n,
            rate=round(rate, 4),
            rate_from=rate_from,
            rho=round(rho, 4),
            rho_from=rho_from,
            n_to_read=samples_for_halfwidth(rate, rho, halfwidth, n),
            n_labels_only=samples_for_halfwidth(rate, 0.0, halfwidth, n),
        )
        if share is not None:
            plan.budget_share = share
            if n:
                plan.halfwidth_of_budget = round(halfwidth_for_samples(rate, rho, min(share, n)), 4)
        if pace is not None:
            plan.seconds_per_item = round(pace[0], 1)
            plan.seconds_from = f"the readers' median over {pace[1]} timed labels in --labels"
            plan.hours_to_read = round(plan.n_to_read * pace[0] / 3600, 2)
        plans.append(plan)
    return plans
