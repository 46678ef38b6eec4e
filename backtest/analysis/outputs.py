"""The typed outputs of the analyses: ``compare.json`` (:class:`Comparison`), ``diversity.json``
(:class:`DiversityReport`), a judge validation's ``validation.json`` (:class:`ValidationReport`) and an
annotation export's private ``decode.json`` (:class:`Decode`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from backtest.core.records import Output, Rate
from backtest.core.runs import RunCost, RunJudge


class LeaderboardRow(BaseModel):
    """One system's place: ranked by coverage, then answered, then refutation rate."""

    model_config = ConfigDict(extra="forbid")

    rank: int
    label: str
    valid: bool
    coverage: float | None
    answered_rate: float | None
    premise_refutation_rate: float | None
    n: int
    judge_tokens: int | None = None  # prompt + completion tokens of the run's labels (RUN.json cost)
    cost: float | None = None  # what those labels cost, when the judge config has a price
    currency: str | None = None
    # grounded in careful reading (compare --labels): PPI++ per run; absent where the run was not read
    grounded_coverage: float | None = None
    grounded_coverage_ci95: list[float] | None = None
    n_labelled: int | None = None
    effective_n: float | None = None
    kappa: float | None = None  # the judge against the readers on the run's sample (engaged)
    grounded_answered: float | None = None
    grounded_premise_refuted: float | None = None


class SystemRow(BaseModel):
    """One run in a comparison (``compare.json``'s ``systems``): where it is, its judge and that judge's
    validity line, every proportion metric with its 95% interval (the judge's; ``contamination_rate`` the
    probe's, None where it cannot run), the means, the judge's outcome counts and flags, its cost, and with
    labels its rates grounded in careful reading (the run's :class:`~backtest.analysis.estimate.RunEstimate`)."""

    model_config = ConfigDict(extra="forbid")

    label: str
    system: str
    run_id: str
    instance_id: str
    path: str
    valid: bool
    judge: RunJudge
    judge_validity: str
    grounded: dict[str, Any] | None
    judge_outcomes: dict[str, int]
    judge_flags: list[str]
    n_questions: int
    cost: RunCost | None
    coverage: Rate
    answered_rate: Rate
    partially_addressed: Rate
    posed_but_open: Rate
    not_addressed: Rate
    premise_refutation_rate: Rate
    multi_source_rate: Rate
    specificity_rate: Rate
    contamination_rate: Rate | None
    mean_supporting_papers: float | None
    mean_top1_similarity: float | None
    first_engagement_lag_years: float | None
    first_engagement_lag_years_release: float | None

    def rate(self, key: str) -> Rate | None:
        """One of the proportion metrics by its name (``coverage``, ``answered_rate``, ...)."""
        value = getattr(self, key)
        assert value is None or isinstance(value, Rate), key
        return value

    def grounded_rate(self, key: str) -> dict[str, Any] | None:
        """One grounded rate (``coverage``, ``answered``, ``premise_refuted``), None where the run was not read."""
        return (self.grounded or {}).get("rates", {}).get(key)


class PairTest(BaseModel):
    """One pairwise test of a comparison: a two-sided Fisher exact test of ``metric`` between runs ``a`` and
    ``b`` (their k/n), with Holm and Bonferroni corrections within the metric's family of pairs and the paper's
    band on the uncorrected p."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    metric_name: str
    a: str
    b: str
    a_count: str
    b_count: str
    p_value: float
    odds_ratio: float
    band: str
    p_holm: float
    p_bonferroni: float


class Comparison(Output):
    """``compare.json``: systems x metrics with 95% intervals, pairwise Fisher tests, the leaderboard."""

    allow_invalid: bool
    any_invalid: bool
    systems: list[SystemRow]
    tests: list[PairTest]
    leaderboard: list[LeaderboardRow]
    warnings: list[str]
    notes: list[str]
    grounded: bool = False  # ranked by rates grounded in careful reading (compare --labels)
    grounded_tests: list[dict[str, Any]] | None = None


class DiversityReport(Output):
    """``diversity.json``: distinct questions per set under each equivalence rule, and the rules' audit."""

    distinct: dict[str, Any]
    audit: dict[str, Any] | None = None


class ValidationReport(Output):
    """``validation.json``: a judge against readers' labels (kappa with intervals, confusions, label use)."""

    kind: Literal["judge-validation", "pairwise-judge-validation"]
    judge: dict[str, Any]
    evaluation: str
    items: dict[str, Any]
    labels: dict[str, Any]
    seed: int  # the bootstrap's and the cross-validation folds' seed
    n_boot: int | None = None  # bootstrap replicates of the kappa intervals; None for pairs (Clopper–Pearson)


class ItemSource(BaseModel):
    """Where one blinded item came from: its run, system and question, and the run judge's labels."""

    model_config = ConfigDict(extra="forbid")

    run: str
    instance: str
    system: str
    question_id: str
    judge: str | None
    judge_outcome: str
    judge_premise_status: str


class PairSource(BaseModel):
    """Where one blinded pair came from: its arena and context, and the systems behind sides a and b."""

    model_config = ConfigDict(extra="forbid")

    arena: str
    instance: str
    context_id: str
    a: str
    b: str
    a_question_id: str
    b_question_id: str


class StratumSample(BaseModel):
    """One stratum of a run's sample: how many questions it holds and which were drawn."""

    model_config = ConfigDict(extra="forbid")

    population: int
    sampled: list[str]


class RunSample(BaseModel):
    """How one run's items were drawn: its population (questions with a judgment), the question ids drawn
    and, for a simple random sample, each question's inclusion probability (n / N); a stratified draw
    gives its strata instead (each stratum's weight is its population over its sample). Since issue 39 an
    export also records the frozen set the run scored (``frozen_seal``) and a hash of what the sample showed
    (``shown_sha256``: :func:`backtest.analysis.reading.sample.shown_sha256_of`); ``estimate`` checks both
    against the run, and draws the sample again from the seed (None: an export made before)."""

    model_config = ConfigDict(extra="forbid")

    population: int
    sampled: list[str]
    inclusion_probability: float | None = None
    strata: dict[str, StratumSample] | None = None
    frozen_seal: str | None = None
    shown_sha256: str | None = None


class SampleDesign(BaseModel):
    """The sampling design of an annotation export, what an estimate needs to weight its labels.

    ``srs``: a simple random sample without replacement from each run (seeded), the design PPI assumes.
    ``stratified``: within each run, round-robin over the run judge's outcome labels (the strata)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["srs", "stratified"]
    seed: int | None = None  # None: merged batches drawn with different seeds (each batch's is in merged_from)
    per_run: int | None = None  # --per-run N; None when --n was split over the runs
    n: int | None = None  # --n N split over the runs (None with --per-run, or an export made before it was kept)
    stratify: str | None = None
    runs: dict[str, RunSample]


class Decode(Output):
    """``decode.json`` of an annotation export (private, never shown to readers): every item id mapped back to
    where it came from, with the export's settings (a merged export lists each batch's in ``merged_from``)."""

    kind: Literal["items", "pairs"]
    n: int
    items: dict[str, ItemSource] | dict[str, PairSource]
    seed: int | None = None
    stratify: str | None = None
    first_item: int | None = None
    runs: list[str] | None = None
    arenas: list[str] | None = None
    merged_from: list[dict[str, Any]] | None = None
    design: SampleDesign | None = None  # None: an export made before designs were recorded, or of pairs
    no_design: str | None = None  # a merge whose batches form no one design: why (estimate says it)

    @model_validator(mode="after")
    def _items_of_kind(self) -> Decode:
        source = ItemSource if self.kind == "items" else PairSource
        if not all(isinstance(v, source) for v in self.items.values()):
            raise ValueError(f"items: a {self.kind} export maps every item to a {source.__name__}")
        return self
