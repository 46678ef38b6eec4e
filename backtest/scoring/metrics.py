"""Run metrics over a frozen question set: ``compute_metrics(questions, judgments, retrievals, cutoff)``.

Every rate is over **all n frozen questions** (a question without a judgment, or with
an unknown label, still counts in the denominator) and carries its count and a 95%
Clopper–Pearson interval (``{"k", "n", "rate", "ci95"}``).

Our conventions (the top-level keys):

* ``outcomes``: the four outcome rates (answered, partially_addressed, posed_but_open,
  not_addressed). They sum to 1 when every question has a known label; otherwise
  ``unresolved`` (missing judgments + unknown outcome labels) makes up the rest.
* ``coverage`` = engaged = answered + partially_addressed + posed_but_open
  (= 1 - not_addressed when nothing is unresolved); ``answered_rate``.
* ``premise``: the five premise-status rates; ``premise_refutation_rate`` = refuted.
* ``mean_supporting_papers``: mean number of cited (``supporting_ids``) papers over all
  n questions; ``multi_source_rate``: questions citing >= 2 papers, over all n.
* ``first_engagement_lag_years``: over engaged questions with dated citations, the days
  from the cutoff to the earliest cited paper's ``published`` date (from the retrieval
  records) / 365.25. Dates are compared by day. Undated citations are counted, not guessed.
* ``mean_top1_similarity``: mean retrieval ``top1_similarity`` over questions that have one.
* ``specificity_rate``: questions whose text names a catalogued object
  (``backtest.text.objects.find_objects``).
* ``mean_lead_time_years``: always ``null`` (needs the date the question was first posed
  in the literature, which a backtest does not observe); ``mean_lead_time_reason`` says so.
* ``needs_review``: judgments flagged for review, with reasons counted;
  ``unknown_labels``: labels outside the taxonomy, per field, counted (never mapped).

The reference release's conventions (``release_metrics``; also under ``"release"`` in
the output) reproduce its ``results/<system>/metrics.json`` exactly:

* rates rounded to 4 decimals, ``future_attention_rate`` = coverage;
* ``premise_status_counts`` lists only labels that occur, keys sorted;
* ``mean_retrieval_support_count``: mean cited papers over **engaged** questions only,
  rounded to 2 decimals (``multi_source_rate`` stays over all questions);
* ``first_engagement_lag_years``: the earliest cited paper's **year** (the first four
  characters of its ADS bibcode, or its published year) minus the cutoff year, over
  engaged questions; mean rounded to 2 decimals, integer min and max;
* ``mean_top1_retrieval_similarity`` rounded to 4 decimals.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from backtest.core.records import ENGAGED_OUTCOMES, OUTCOMES, PREMISE_STATUSES, Judgment, Question, Retrieval
from backtest.core.runs import ReleaseLag, ReleaseMetrics
from backtest.core.stats import proportion
from backtest.scoring.outputs import LagSummary, Metrics, NeedsReview, UnknownLabels
from backtest.text.objects import find_objects

LEAD_TIME_REASON = (
    "lead time needs the date each question was first posed in the literature; a backtest "
    "observes only when the future corpus engaged it, so lead time is not estimated"
)
LAG_NOTE = "lower bound from judge-cited evidence only"
#: said beside every table ranked by the judge alone (score, report, compare and leaderboard without --labels)
JUDGE_ONLY_NOTE = (
    "a judge-only rate can be moved by the submission itself (terms appended for the judge to match, wording "
    "aimed at the judge); rates grounded in careful reading cannot: backtest estimate RUN --labels DIR"
)
COLLAPSE_SHARE = 0.9  # a judge that puts more of a run than this on one outcome label is flagged
_BIBCODE_YEAR = re.compile(r"^((?:1[89]|20)\d{2})[A-Za-z&]")  # ADS bibcode: YYYY + journal


def compute_metrics(
    questions: Sequence[Question],
    judgments: Sequence[Judgment],
    retrievals: Sequence[Retrieval],
    cutoff: dt.date | str,
) -> Metrics:
    """All run metrics over the n frozen ``questions`` (module docstring lists every key)."""
    cutoff = _as_date(cutoff)
    n = len(questions)
    by_id = _judgments_by_question(questions, judgments)
    labelled = [by_id.get(q.question_id) for q in questions]
    outcome_counts = Counter(j.outcome for j in labelled if j is not None)
    premise_counts = Counter(j.premise_status for j in labelled if j is not None)
    unknown_outcomes = {k: v for k, v in outcome_counts.items() if k not in OUTCOMES}
    unknown_premises = {k: v for k, v in premise_counts.items() if k not in PREMISE_STATUSES}
    missing = [q.question_id for q, j in zip(questions, labelled) if j is None]
    unresolved = len(missing) + sum(unknown_outcomes.values())
    engaged = [j for j in labelled if j is not None and j.outcome in ENGAGED_OUTCOMES]
    n_cited = [len(j.supporting_ids) if j is not None else 0 for j in labelled]

    dates = _document_dates(retrievals)
    lags, undated = [], 0
    for j in engaged:
        days = [dates.get(i) for i in j.supporting_ids]
        known = [d for d in days if d is not None]
        undated += len(days) - len(known)
        if known:
            lags.append((min(known) - cutoff).days / 365.25)

    top1 = [r.top1_similarity for r in retrievals if r.top1_similarity is not None]
    specific = [q.question_id for q in questions if find_objects(q.question)]
    review = Counter(reason for j in labelled if j is not None for reason in j.needs_review)

    return Metrics(
        schema_version="1",
        n_questions=n,
        cutoff=cutoff.isoformat(),
        outcomes={label: proportion(outcome_counts.get(label, 0), n) for label in OUTCOMES},
        unresolved=proportion(unresolved, n),
        coverage=proportion(len(engaged), n),
        answered_rate=proportion(outcome_counts.get("answered", 0), n),
        premise={label: proportion(premise_counts.get(label, 0), n) for label in PREMISE_STATUSES},
        premise_refutation_rate=proportion(premise_counts.get("refuted", 0), n),
        mean_supporting_papers=_mean(n_cited),
        multi_source_rate=proportion(sum(c >= 2 for c in n_cited), n),
        first_engagement_lag_years=LagSummary(
            **_summary(lags),
            n_undated_citations=undated,
            convention="days from the cutoff to the earliest cited paper's published date / 365.25, engaged questions",
            note=LAG_NOTE,
        ),
        mean_top1_similarity=_mean(top1),
        specificity_rate=proportion(len(specific), n),
        mean_lead_time_years=None,
        mean_lead_time_reason=LEAD_TIME_REASON,
        needs_review=NeedsReview(
            n=sum(1 for j in labelled if j is not None and j.needs_review), reasons=dict(sorted(review.items()))
        ),
        unknown_labels=UnknownLabels(
            outcome=dict(sorted(unknown_outcomes.items())), premise_status=dict(sorted(unknown_premises.items()))
        ),
        missing_judgments=missing,
        extra_judgments=sorted({j.question_id for j in judgments} - {q.question_id for q in questions}),
        release=release_metrics(questions, judgments, retrievals, cutoff),
    )


def release_metrics(
    questions: Sequence[Question],
    judgments: Sequence[Judgment],
    retrievals: Sequence[Retrieval],
    cutoff: dt.date | str,
) -> ReleaseMetrics:
    """The metric fields of the reference release's ``metrics.json``, by its conventions
    (module docstring). Reproduces the release's files exactly from its labels."""
    cutoff = _as_date(cutoff)
    n = len(questions)
    by_id = _judgments_by_question(questions, judgments)
    labelled = [by_id.get(q.question_id) for q in questions]
    counts = Counter(j.outcome for j in labelled if j is not None)
    premises = Counter(j.premise_status for j in labelled if j is not None)
    engaged = [j for j in labelled if j is not None and j.outcome in ENGAGED_OUTCOMES]
    dates = _document_dates(retrievals)
    lags = []
    for j in engaged:
        years = [y for y in (_paper_year(i, dates) for i in j.supporting_ids) if y is not None]
        if years:
            lags.append(min(years) - cutoff.year)
    top1 = [r.top1_similarity for r in retrievals if r.top1_similarity is not None]

    def rate(k: int) -> float | None:
        return round(k / n, 4) if n else None

    return ReleaseMetrics(
        cutoff_date=cutoff.isoformat(),
        n_questions=n,
        future_attention_rate=rate(len(engaged)),
        answered_rate=rate(counts.get("answered", 0)),
        partial_rate=rate(counts.get("partially_addressed", 0)),
        posed_but_open_rate=rate(counts.get("posed_but_open", 0)),
        not_addressed_rate=rate(counts.get("not_addressed", 0)),
        premise_refutation_rate=rate(premises.get("refuted", 0)),
        premise_status_counts=dict(sorted(premises.items())),
        mean_retrieval_support_count=round(statistics.fmean(len(j.supporting_ids) for j in engaged), 2)
        if engaged
        else None,
        multi_source_rate=rate(sum(1 for j in labelled if j is not None and len(j.supporting_ids) >= 2)),
        mean_top1_retrieval_similarity=round(statistics.fmean(top1), 4) if top1 else None,
        first_engagement_lag_years=ReleaseLag(
            mean=round(statistics.fmean(lags), 2) if lags else None,
            min=min(lags) if lags else None,
            max=max(lags) if lags else None,
            note=LAG_NOTE,
        ),
        mean_lead_time_years=None,
    )


def _judgments_by_question(questions: Sequence[Question], judgments: Sequence[Judgment]) -> dict[str, Judgment]:
    """The last judgment per question id (later lines supersede earlier ones, e.g. adjudication)."""
    return {j.question_id: j for j in judgments}


def _document_dates(retrievals: Sequence[Retrieval]) -> dict[str, dt.date]:
    dates: dict[str, dt.date] = {}
    for r in retrievals:
        for doc in r.documents:
            if doc.published is not None:
                dates[doc.id] = doc.published
    return dates


def _paper_year(paper_id: str, dates: dict[str, dt.date]) -> int | None:
    """A cited paper's year: its published date when known, else an ADS bibcode's year."""
    if paper_id in dates:
        return dates[paper_id].year
    match = _BIBCODE_YEAR.match(paper_id)
    return int(match.group(1)) if match else None


def _summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "mean": None, "median": None, "min": None, "max": None}
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
    }


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _as_date(value: dt.date | str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def format_rate(rate: dict[str, Any] | None) -> str:
    """One rate as text: ``0.240 [0.131, 0.382] (12/50)``; ``–`` when there is none (n = 0)."""
    if not rate or rate.get("rate") is None:
        return "–"
    lo, hi = rate["ci95"]
    return f"{rate['rate']:.3f} [{lo:.3f}, {hi:.3f}] ({rate['k']}/{rate['n']})"


def collapse_flags(judge_outcomes: dict[str, int], reader_outcomes: dict[str, float] | None = None) -> list[str]:
    """What marks a collapsed judge on a run: more than 90% of the run on one outcome label, or an outcome the
    readers used on the run's sample that the judge never gives there (more than ``COLLAPSE_SHARE``)."""
    flags = []
    total = sum(judge_outcomes.values())
    if total:
        top, k = max(judge_outcomes.items(), key=lambda kv: (kv[1], kv[0]))
        if k / total > COLLAPSE_SHARE:
            flags.append(f"the judge puts {k} of {total} questions ({k / total:.0%}) on {top}")
    for label in OUTCOMES:
        if reader_outcomes and reader_outcomes.get(label, 0) > 0 and not judge_outcomes.get(label):
            flags.append(f"the judge never says {label}, which the readers gave on this run's sample")
    return flags
