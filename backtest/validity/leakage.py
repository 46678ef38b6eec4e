"""The mechanical leakage checks of a scored run.

A benchmark number is only as good as its isolation. Each check below reads the
files a run is made of (the frozen questions, ``retrieval.jsonl``,
``judgments.jsonl``), the instance and both corpus manifests, and reports
``passed``/``failed`` with the offending ids. Dates are compared by day.

1. ``cutoff``: every question's ``cutoff_date`` equals the instance cutoff.
2. ``evidence_in_past``: every source evidence id is in the past corpus, dated on or before the cutoff.
3. ``retrieved_in_future``: every retrieved document is in the future corpus, dated strictly after the cutoff.
4. ``citations_shown``: every judge citation is among the documents shown for that question.
5. ``ids_aligned``: question ids are unique and identical across questions, retrieval and judgments.
6. ``windows``: the future window starts after the cutoff; the past window ends on or before it
   (both as the instance records them and as the manifests say), and each manifest has its role.
7. ``corpora_disjoint``: no id is in both corpora; no past arXiv id's yymm is later than the cutoff month.
8. ``integrity``: the frozen set and both manifests still verify, and match the instance's seals;
   ``RUN.json``'s instance and frozen-set seals are those of the files it names.

A check never raises: a corpus that cannot be opened fails the checks that need it,
so one failure never hides another. :func:`check_run` loads a run folder and runs all
eight; :func:`leakage_record` is the ``valid``/``leakage`` pair that ``score`` writes
into ``RUN.json`` and ``metrics.json``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl, read_json
from backtest.core.records import Instance, Judgment, Question, Retrieval, output_dict, parse_record
from backtest.core.runs import LeakageCheck, Run
from backtest.core.workspace import Workspace
from backtest.corpus.build import load_manifest, verify_corpus
from backtest.corpus.sources import arxiv_id_month
from backtest.corpus.store import CorpusStore
from backtest.submit.gates import normalise_id
from backtest.validity.runfolder import RunFolder

MAX_LISTED = 20


@dataclass
class CheckResult:
    """One leakage check: its name, pass/fail, a one-line summary and the offending ids."""

    name: str
    passed: bool
    summary: str
    offenders: list[str] = field(default_factory=list)

    def record(self) -> LeakageCheck:
        """The check as ``RUN.json`` and ``metrics.json`` carry it (offender list capped, with the full count)."""
        return LeakageCheck(
            name=self.name,
            status="passed" if self.passed else "failed",
            summary=self.summary,
            n_offenders=len(self.offenders),
            offenders=self.offenders[:MAX_LISTED],
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form of :meth:`record`."""
        return output_dict(self.record())


@dataclass
class RunData:
    """Everything the checks read, loaded once."""

    instance: Instance
    questions: list[Question]
    retrievals: list[Retrieval]
    judgments: list[Judgment]
    frozen_path: Path | None
    ws: Workspace
    header: Run | None = None  # the run's RUN.json (None: checks run on files that are not a run folder)
    stores: dict[str, CorpusStore | None] = field(default_factory=dict)
    store_errors: dict[str, str] = field(default_factory=dict)

    def store(self, role: str) -> CorpusStore | None:
        """The past or future corpus store, opened without trusting it (integrity is check 8)."""
        if role not in self.stores:
            ref = self.instance.past if role == "past" else self.instance.future
            try:
                self.stores[role] = CorpusStore(load_manifest(ref.corpus_id, self.ws), self.ws) if ref else None
            except Exception as exc:  # noqa: BLE001 - reported by the checks, not raised
                self.stores[role] = None
                self.store_errors[role] = getattr(exc, "message", str(exc))
        return self.stores[role]


def _result(name: str, offenders: list[str], ok_text: str, bad_text: str) -> CheckResult:
    if offenders:
        return CheckResult(name, False, f"{bad_text}: {len(offenders)} (e.g. {offenders[0]})", offenders)
    return CheckResult(name, True, ok_text)


def check_cutoff(run: RunData) -> CheckResult:
    """1. Each question's cutoff equals the instance cutoff."""
    cutoff = run.instance.cutoff
    bad = [
        f"{q.question_id}: cutoff_date {q.cutoff_date} != {cutoff}" for q in run.questions if q.cutoff_date != cutoff
    ]
    return _result(
        "cutoff", bad, f"all {len(run.questions)} questions carry cutoff {cutoff}", "questions with another cutoff"
    )


def check_evidence_in_past(run: RunData) -> CheckResult:
    """2. Every source evidence id is in the past corpus and dated on or before the cutoff."""
    past = run.store("past")
    if past is None:
        return CheckResult("evidence_in_past", False, f"past corpus cannot be opened: {run.store_errors.get('past')}")
    cutoff, bad = run.instance.cutoff, []
    for q in run.questions:
        for ident in q.source_evidence_ids:
            day = past.dates.get(normalise_id(ident))  # the freeze gate's normaliser: arXiv: prefix and vN dropped
            if day is None:
                bad.append(f"{q.question_id}: {ident} not in past corpus {past.corpus_id}")
            elif day > cutoff:
                bad.append(f"{q.question_id}: {ident} dated {day}, after cutoff {cutoff}")
    return _result(
        "evidence_in_past",
        bad,
        "every source evidence id is a past record dated on or before the cutoff",
        "evidence ids outside the past corpus or after the cutoff",
    )


def check_retrieved_in_future(run: RunData) -> CheckResult:
    """3. Every retrieved document is in the future corpus and dated strictly after the cutoff."""
    future = run.store("future")
    if future is None:
        return CheckResult(
            "retrieved_in_future",
            False,
            f"future corpus cannot be opened: {run.store_errors.get('future', 'none declared')}",
        )
    cutoff, bad = run.instance.cutoff, []
    for r in run.retrievals:
        if r.corpus_seal != future.seal:
            bad.append(
                f"{r.question_id}: retrieval from corpus seal {r.corpus_seal[:12]}…, not the instance's future corpus"
            )
        for doc in r.documents:
            day = future.dates.get(doc.id)
            if day is None:
                bad.append(f"{r.question_id}: {doc.id} not in future corpus {future.corpus_id}")
            elif day <= cutoff or (doc.published is not None and doc.published <= cutoff):
                bad.append(
                    f"{r.question_id}: {doc.id} dated {min(day, doc.published or day)}, not after cutoff {cutoff}"
                )
    return _result(
        "retrieved_in_future",
        bad,
        "every retrieved document is a future record dated after the cutoff",
        "retrieved documents outside the future corpus or not after the cutoff",
    )


def _cited_ids(j: Judgment) -> list[str]:
    return list(dict.fromkeys([e.id for e in j.evidence] + list(j.supporting_ids)))


def check_citations_shown(run: RunData) -> CheckResult:
    """4. Every judge citation is among the documents that judge was shown for that question."""
    shown = {r.question_id: {d.id for d in r.documents} for r in run.retrievals}
    bad = []
    for j in run.judgments:
        for ident in _cited_ids(j):
            if ident not in shown.get(j.question_id, set()):
                bad.append(f"{j.question_id}: cites {ident}, which it was not shown")
    return _result(
        "citations_shown", bad, "every citation is among the documents shown", "citations of documents not shown"
    )


def check_ids_aligned(run: RunData) -> CheckResult:
    """5. Question ids are unique and aligned across questions, retrieval and judgments."""
    bad = []
    sets = {}
    for name, ids in (
        ("questions", [q.question_id for q in run.questions]),
        ("retrieval", [r.question_id for r in run.retrievals]),
        ("judgments", [j.question_id for j in run.judgments]),
    ):
        bad += [f"{name}: {i} appears {n} times" for i, n in sorted(Counter(ids).items()) if n > 1]
        sets[name] = set(ids)
    for name in ("retrieval", "judgments"):
        bad += [f"{name}: missing {i}" for i in sorted(sets["questions"] - sets[name])]
        bad += [f"{name}: extra {i}" for i in sorted(sets[name] - sets["questions"])]
    return _result(
        "ids_aligned",
        bad,
        f"{len(sets['questions'])} unique ids, aligned across questions, retrieval and judgments",
        "duplicate, missing or extra ids",
    )


def check_windows(run: RunData) -> CheckResult:
    """6. The future window starts after the cutoff; the past window ends on or before it.

    Both the windows the instance records and those of the manifests on disk are checked,
    and each manifest must carry its role (a future corpus passed off as the past fails).
    """
    cutoff, bad = run.instance.cutoff, []
    for role, ref in (("past", run.instance.past), ("future", run.instance.future)):
        if ref is None:
            bad.append(f"{role}: no corpus")
            continue
        store = run.store(role)
        windows = [("instance", ref.window)] + ([("manifest", store.manifest.window)] if store else [])
        for where, window in windows:
            if role == "past" and window.end > cutoff:
                bad.append(f"past window ({where} {ref.corpus_id}) ends {window.end}, after cutoff {cutoff}")
            elif role == "future" and window.start <= cutoff:
                bad.append(f"future window ({where} {ref.corpus_id}) starts {window.start}, not after cutoff {cutoff}")
        if store is not None and store.manifest.role != role:
            bad.append(f"{role} corpus {ref.corpus_id} has role {store.manifest.role!r}")
    return _result(
        "windows", bad, "past window ends on or before the cutoff; future window starts after it", "window violations"
    )


def check_corpora_disjoint(run: RunData) -> CheckResult:
    """7. No record in both corpora; no past arXiv id whose yymm is later than the cutoff month."""
    past, future = run.store("past"), run.store("future")
    if past is None or future is None:
        return CheckResult("corpora_disjoint", False, "a corpus cannot be opened")
    cutoff = run.instance.cutoff
    bad = [f"{i}: in both corpora" for i in sorted(set(past.dates) & set(future.dates))]
    for ident in sorted(past.dates):
        month = arxiv_id_month(ident)
        if month is not None and month > (cutoff.year, cutoff.month):
            bad.append(
                f"{ident}: arXiv id month {month[0]}-{month[1]:02d} is after the cutoff month, yet in the past corpus"
            )
    return _result(
        "corpora_disjoint",
        bad,
        "corpora are disjoint and no past arXiv id postdates the cutoff month",
        "records shared by both corpora or past ids from after the cutoff",
    )


def check_integrity(run: RunData) -> CheckResult:
    """8. The frozen set and both manifests still verify and match the instance."""
    from backtest.submit.freeze import is_frozen_and_intact

    bad = []
    if run.frozen_path is None:
        bad.append("run names no frozen set")
    else:
        ok, reason = is_frozen_and_intact(run.frozen_path, run.ws)
        if not ok:
            bad.append(f"frozen set {run.frozen_path}: {reason}")
        frozen_file = run.frozen_path / "FROZEN.json"
        try:
            frozen_seal = read_json(frozen_file).get("seal")
        except (BadInput, AttributeError):
            frozen_seal = None  # is_frozen_and_intact above already names the problem
        recorded = run.header.frozen_seal if run.header else None
        if recorded and recorded != frozen_seal:
            bad.append(f"RUN.json frozen_seal {recorded[:12]}… is not the seal of {frozen_file}")
    recorded = run.header.instance_seal if run.header else None
    if recorded and recorded != run.instance.seal:
        bad.append(f"RUN.json instance_seal {recorded[:12]}… is not instance {run.instance.instance_id}'s seal")
    for role, ref in (("past", run.instance.past), ("future", run.instance.future)):
        if ref is None:
            bad.append(f"{role}: no corpus")
            continue
        try:
            manifest = load_manifest(ref.corpus_id, run.ws)
        except Exception as exc:  # noqa: BLE001
            bad.append(f"{role} manifest {ref.corpus_id}: {getattr(exc, 'message', exc)}")
            continue
        if manifest.seal != ref.seal:
            bad.append(f"{role} manifest {ref.corpus_id}: seal differs from the instance's")
        bad += [f"{role} corpus: {p}" for p in verify_corpus(manifest, run.ws).problems]
    return _result("integrity", bad, "frozen set and both corpora verify", "integrity failures")


CHECKS: list[Callable[[RunData], CheckResult]] = [
    check_cutoff,
    check_evidence_in_past,
    check_retrieved_in_future,
    check_citations_shown,
    check_ids_aligned,
    check_windows,
    check_corpora_disjoint,
    check_integrity,
]


def load_run(run_dir: Path, ws: Workspace, with_text: bool = False) -> RunData:
    """Load a run folder (``RUN.json``, ``retrieval.jsonl``, ``judgments.jsonl``) and its frozen questions.

    The checks read ids and dates only; ``with_text`` (what a control that judges again needs) re-cuts a
    compact run's document text from the sealed corpus, or refuses (:func:`~backtest.retrieve.compact.read_retrievals`).
    """
    from backtest.corpus.instance import load_instance

    folder = RunFolder.open(run_dir)
    header = folder.run
    instance = load_instance(header.instance_id, ws)
    frozen_path = folder.frozen_path(ws) if header.frozen_path else None
    questions_file = frozen_path / "questions.jsonl" if frozen_path else None
    questions = (
        [parse_record(Question, obj, f"{questions_file}:{n}") for n, obj in iter_jsonl(questions_file)]
        if questions_file and questions_file.is_file()
        else []
    )
    return RunData(
        instance=instance,
        questions=questions,
        retrievals=folder.retrievals(ws, text=with_text),
        judgments=folder.judgments,
        frozen_path=frozen_path,
        ws=ws,
        header=header,
    )


def run_checks(run: RunData) -> list[CheckResult]:
    """Run all eight checks; each is independent, so one failure never hides another."""
    return [check(run) for check in CHECKS]


def check_run(run_dir: Path, ws: Workspace) -> list[CheckResult]:
    """Load a run folder and run every leakage check on it."""
    return run_checks(load_run(run_dir, ws))


def leakage_checks(results: list[CheckResult]) -> list[LeakageCheck]:
    """The checks as RUN.json and metrics.json carry them (``leakage``; ``valid`` is whether all passed)."""
    return [r.record() for r in results]


def leakage_record(results: list[CheckResult]) -> dict[str, Any]:
    """``{"valid": bool, "leakage": [check dicts]}``: what ``backtest leakage --json`` prints."""
    return {"valid": all(r.passed for r in results), "leakage": [r.as_dict() for r in results]}


def failure_lines(results: list[CheckResult]) -> list[str]:
    """One line per failed check: ``leakage NAME failed: summary``."""
    return [f"leakage {r.name} failed: {r.summary}" for r in results if not r.passed]
