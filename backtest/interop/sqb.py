"""Import the reference release (``sqb/``) into our own records and folder layout.

``import_sqb(release_dir, out_dir)`` writes, under ``out_dir`` (a workspace root):

* ``manifests/instances/<instance>.json`` — one sealed :class:`~backtest.core.records.Instance`
  per release instance (``sqb-astronomy-v1L``, ``sqb-astronomy-v1``,
  ``sqb-prospective-2026``, and ``sqb-stress-c<YYYY>`` per stress-test cutoff), each with
  the sets the release holds for it, discovered from its files
  (:mod:`backtest.interop.sqb_layout`; a file no rule knows is reported, never silently
  skipped). The corpus "seals" there are sha256 digests of the
  release's manifest *files*: the ADS corpora themselves are not redistributed, so no
  record-level seal can be computed.
* ``frozen/<instance>/<system>/v1/`` — ``questions.jsonl`` copied byte for byte (so the
  release's own checksums still verify), ``metadata.json`` (the release's when it has
  one, else a described placeholder), ``FROZEN.json`` (a sealed
  :class:`~backtest.core.records.FrozenSet`). Gates are recorded honestly: ``schema`` and
  ``cutoff`` are checked, ``evidence`` is **skipped** (the ADS past corpus is not held),
  ``release_checksums`` checks ``SHA256SUMS`` where the release ships one. A line per
  set is appended to ``frozen/LEDGER.jsonl`` (kind ``import``).
* ``results/<instance>/<system>/<run_id>/`` for every labelled set — ``judgments.jsonl``
  (:class:`~backtest.core.records.Judgment`, provenance ``judge`` with the judge model and
  protocol named in the file, or ``adjudicated`` for the v1 pilot, whose labels are the
  human-adjudicated ones; ``bibcode`` becomes ``id``), ``retrieval.jsonl``
  (:class:`~backtest.core.records.Retrieval`; the release has **no document text**, so titles
  and abstracts are empty and ``text_available`` is false), ``metrics.json`` (ours, from
  :func:`backtest.scoring.metrics.compute_metrics`, plus the release's file and a field-by-field
  match of our release-convention variant), ``RUN.json``.
* ``labels/sqb-annotation/annotator_<N>.jsonl`` — the blinded human annotation decoded
  with ``decode.json`` (:func:`import_annotation`), one rater file per annotator.

Fields we do not model are kept on the records (``extra="allow"``), never dropped.
The import is deterministic: rerunning it gives byte-identical files; a file that exists
with different content is refused (frozen files are never edited in place).
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes, iter_jsonl, read_json, write_json, write_jsonl
from backtest.core.records import (
    ENGAGED_OUTCOMES,
    OUTCOMES,
    PREMISE_STATUSES,
    FrozenSet,
    GateResult,
    Instance,
    Judgment,
    Question,
    Retrieval,
    SubmissionMetadata,
    output_dict,
    parse_record,
)
from backtest.core.runs import ImportedFrom, Run, RunJudge, RunRetriever
from backtest.core.seal import sha256_bytes, sha256_file, with_seal
from backtest.core.sums import verify_sums
from backtest.core.text import CONTROL_CHARS, visible
from backtest.core.workspace import Workspace
from backtest.interop.sqb_layout import PROSPECTIVE, InstanceSpec, SetSpec, discover_release
from backtest.scoring.metrics import compute_metrics
from backtest.submit.ledger import append_entry, find_entry, read_ledger
from backtest.validity.runfolder import RunFolder

NO_TEXT_NOTE = (
    "the reference release does not redistribute the ADS corpus: retrieval records carry ids, "
    "ranks and scores only, no title or abstract text"
)
EVIDENCE_SKIP = (
    "the release's past corpus (NASA ADS records) is not held here, so membership and dating of "
    "source_evidence_ids cannot be checked"
)
NO_RETRIEVAL = "the release ships no retrieval file for this set: the documents shown to its judge are not known"
# decode.json names the v1 pilot system "evidence_graph"; its frozen set is evidence_graph_v1.
ANNOTATION_SYSTEM_ALIASES = {"evidence_graph": "evidence_graph_v1"}


# --------------------------------------------------------------------------- entry points


def import_sqb(
    release_dir: str | Path, out_dir: str | Path, annotation: bool = True, strict: bool = False
) -> dict[str, Any]:
    """Import the whole release under ``out_dir``; return a summary of what was written and what was not.

    Instances and sets are discovered from the files present
    (:func:`backtest.interop.sqb_layout.discover_release`). The summary's ``skipped`` and
    ``unexpected`` list every release file not imported, with the reason; with ``strict``
    an unexpected file refuses the import (CheckFailed) before anything is written.
    """
    release = _release_root(release_dir)
    check_tree(release)
    plan = discover_release(release, annotation=annotation)
    if strict and plan.unexpected:
        lines = [f"{u['path']}: {u['reason']}" for u in plan.unexpected]
        raise CheckFailed(f"{len(lines)} unexpected file(s) in the release (--strict); first: {lines[0]}", lines)
    for set_spec in plan.sets:  # every labelled file read once before anything is written
        for rel in (set_spec.labels, set_spec.retrieval, set_spec.adjudication):
            if rel:
                _rows_by_question(release / rel)
    ws = Workspace(Path(out_dir).resolve())
    summary: dict[str, Any] = {"out": str(ws.root), "instances": [], "frozen": [], "runs": []}
    instances: dict[str, Instance] = {}
    for spec in plan.instances:
        instances[spec.instance_id] = _write_instance(release, ws, spec)
        summary["instances"].append(spec.instance_id)
    notes = []
    for set_spec in plan.sets:
        instance = instances[set_spec.instance_id]
        frozen_dir, frozen, questions = _write_frozen(release, ws, set_spec, instance)
        summary["frozen"].append(str(frozen_dir.relative_to(ws.root)))
        if set_spec.labels:
            run_dir = _write_run(release, ws, set_spec, instance, frozen_dir, frozen, questions)
            summary["runs"].append(str(run_dir.relative_to(ws.root)))
        elif set_spec.instance_id != PROSPECTIVE:  # prospective sets are unlabelled by construction
            notes.append(f"{frozen_dir.relative_to(ws.root)}: the release has no labels for it, so no run")
    if plan.annotation:
        summary["labels"] = [
            str(p.relative_to(ws.root)) for p in import_annotation(release, ws.root / "labels" / "sqb-annotation")
        ]
    summary.update(skipped=plan.skipped, unexpected=plan.unexpected, not_scanned=plan.not_scanned, notes=notes)
    written = {run: RunFolder.open(ws.root / run).run for run in summary["runs"]}
    summary["invalid_runs"] = [
        {"run": run, "failed": [c.name for c in record.leakage or [] if c.status == "failed"]}
        for run, record in written.items()
        if not record.valid
    ]
    return summary


def check_tree(release: Path) -> None:
    """Refuse a release tree that reaches outside itself or names files unreadably: a link (file or folder) whose
    target lies outside the release, or a name holding a control character (an ANSI escape, say). BadInput, one
    line, before anything is read or written."""
    root = release.resolve()
    for folder, dirs, files in os.walk(release):
        for name in dirs + files:
            path = Path(folder) / name
            rel = path.relative_to(release).as_posix()
            if CONTROL_CHARS.search(name):
                raise BadInput(f"{release}: the name {visible(rel)!s} holds a control character; rename it")
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                raise BadInput(f"{release}: {rel} is a link to {os.readlink(path)}, outside the release: refused")


def _rows_by_question(path: Path) -> dict[str, dict[str, Any]]:
    """The rows of a release JSONL file by question id; BadInput for a second row of a question that says
    something else (which one is true cannot be told), a row without a question id, or a link."""
    rows: dict[str, dict[str, Any]] = {}
    for n, row in iter_jsonl(path):
        qid = row.get("question_id") if isinstance(row, dict) else None
        if not isinstance(qid, str) or not qid:
            raise BadInput(f"{path}:{n}: no question_id")
        if qid in rows and rows[qid] != row:
            raise BadInput(f"{path}:{n}: a second, different row for question {qid!r}: which is true cannot be told")
        rows[qid] = row
    return rows


def import_annotation(release_dir: str | Path, out_dir: str | Path) -> list[Path]:
    """Decode ``annotation/annotator_*_sheet.csv`` with ``decode.json`` into rater files.

    Each output line is a :class:`~backtest.core.records.Judgment` with provenance ``human``,
    judge name ``annotator_<N>``, plus ``system`` (decoded; ``evidence_graph`` is named
    ``evidence_graph_v1`` like its frozen set, the release's name kept in
    ``release_system``), ``item_id``, ``system_code``, ``confidence`` and ``notes``.
    Labels outside the taxonomy are kept and flagged in ``needs_review``.
    """
    release = Path(release_dir)
    folder = release / "annotation" if (release / "annotation").is_dir() else release
    decode = read_json(folder / "decode.json")
    if not isinstance(decode, dict):
        raise BadInput(f"{folder / 'decode.json'}: expected an object mapping item ids to systems")
    sheets = sorted(folder.glob("annotator_*_sheet.csv"))
    if not sheets:
        raise BadInput(f"{folder}: no annotator_*_sheet.csv files")
    out = Path(out_dir)
    written = []
    for sheet in sheets:
        rater = re.sub(r"_sheet$", "", sheet.stem)
        rows: list[dict[str, Any]] = []
        seen: dict[str, dict[str, str]] = {}
        with open(sheet, newline="", encoding="utf-8") as handle:
            for lineno, row in enumerate(csv.DictReader(handle), start=2):
                item = row.get("item_id", "")
                if item not in decode:
                    raise BadInput(f"{sheet}:{lineno}: item {item!r} is not in decode.json")
                code = decode[item]
                if seen.setdefault(item, row) != row:
                    raise BadInput(f"{sheet}:{lineno}: a second, different row for item {item!r}")
                if seen[item] is not row:
                    continue  # the same row twice: one label
                outcome, premise = row.get("outcome", "").strip(), row.get("premise_status", "").strip()
                data = {
                    "question_id": code["question_id"],
                    "outcome": outcome,
                    "premise_status": premise,
                    "judge": {"name": rater, "protocol": "sqb-annotation-codebook"},
                    "provenance": "human",
                    "needs_review": _label_problems(outcome, premise),
                    "system": ANNOTATION_SYSTEM_ALIASES.get(code["system"], code["system"]),
                    "release_system": code["system"],
                    "system_code": code.get("system_code"),
                    "item_id": item,
                    "confidence": int(row["confidence"])
                    if str(row.get("confidence", "")).strip().isdigit()
                    else row.get("confidence"),
                    "notes": row.get("notes", ""),
                }
                rows.append(parse_record(Judgment, data, f"{sheet}:{lineno}").model_dump(mode="json"))
        path = out / f"{rater}.jsonl"
        _write_once(path, rows)
        written.append(path)
    return written


# --------------------------------------------------------------------------- instances and frozen sets


def _release_root(path: str | Path) -> Path:
    root = Path(path)
    if (root / "sqb").is_dir() and not (root / "submissions").is_dir():
        root = root / "sqb"
    if not (root / "submissions").is_dir() or not (root / "data").is_dir():
        raise BadInput(f"{path}: not the reference release (expected submissions/ and data/)")
    return root


def _write_instance(release: Path, ws: Workspace, spec: InstanceSpec) -> Instance:
    past = read_json(release / spec.past_manifest)
    future = read_json(release / spec.future_manifest)
    data: dict[str, Any] = {
        "instance_id": spec.instance_id,
        "cutoff": spec.cutoff,
        "domain": "exoplanet_atmospheres",
        "past": {
            "corpus_id": past["corpus_id"],
            "seal": sha256_file(release / spec.past_manifest),
            "window": {"start": spec.past_window[0], "end": spec.past_window[1]},
        },
        "future": None,
        "retrieval": {"method": "dense", "model": "text-embedding-3-small", "k": 8},
        "judge": {"name": "sqb-release-llm", "config": None, "config_sha256": None},
    }
    if spec.future_window:
        data["future"] = {
            "corpus_id": future["corpus_id"],
            "seal": sha256_file(release / spec.future_manifest),
            "window": {"start": spec.future_window[0], "end": spec.future_window[1]},
        }
    else:
        data["future_declaration"] = future
    instance = parse_record(
        Instance, with_seal(parse_record(Instance, data, spec.instance_id).model_dump(mode="json")), spec.instance_id
    )
    _write_once(ws.instance_path(spec.instance_id), instance.model_dump(mode="json"))
    return instance


def _write_frozen(
    release: Path, ws: Workspace, spec: SetSpec, instance: Instance
) -> tuple[Path, FrozenSet, list[Question]]:
    src = release / spec.questions
    raw = src.read_bytes()
    questions = [parse_record(Question, row, f"{src}:{n}") for n, row in iter_jsonl(src)]
    ids = [q.question_id for q in questions]
    if len(set(ids)) != len(ids):
        raise BadInput(f"{src}: duplicate question ids")
    cutoff = instance.cutoff
    if spec.metadata:
        metadata = read_json(release / spec.metadata)
    else:
        systems = sorted({q.generation_system for q in questions})
        llm = [s for s in systems if "llm" in s]
        metadata = {
            "system_name": spec.system,
            "description": (
                f"imported from the reference release ({spec.questions}); generation_system {', '.join(systems)}"
            ),
            "repository": None,
            "cutoff_date": cutoff.isoformat(),
            "domain": questions[0].domain if questions else "",
            "n_questions": len(questions),
            "frozen": True,
            "llm_components": {"declared_in_release": False, "generation_system": llm[0]} if llm else None,
            "metadata_source": "synthesised by backtest import sqb: the release ships no metadata.json for this set",
        }
    parse_record(SubmissionMetadata, metadata, f"{spec.system} metadata")
    folder = ws.frozen / spec.instance_id / spec.system / "v1"
    _write_bytes_once(folder / "questions.jsonl", raw)
    _write_once(folder / "metadata.json", metadata)

    gates = [GateResult(name="schema", status="passed", reason=f"{len(questions)} questions parse as records.Question")]
    off = [q.question_id for q in questions if q.cutoff_date != cutoff]
    gates.append(
        GateResult(
            name="cutoff",
            status="failed" if off else "passed",
            reason=f"every question's cutoff_date equals the instance cutoff {cutoff}"
            if not off
            else f"{len(off)} questions name another cutoff",
            details=[{"question_id": q} for q in off],
        )
    )
    gates.append(GateResult(name="evidence", status="skipped", reason=EVIDENCE_SKIP))
    if spec.sums:
        report = verify_sums(release / Path(spec.sums).parent, Path(spec.sums).name, extra=False)
        gates.append(
            GateResult(
                name="release_checksums",
                status="passed" if report.ok else "failed",
                reason=f"{spec.sums} verifies" if report.ok else "; ".join(report.problems)[:500],
            )
        )
    frozen_at = max(q.generated_at for q in questions) if questions else cutoff.isoformat()
    frozen_data = {
        "instance_id": instance.instance_id,
        "instance_seal": instance.seal,
        "system": spec.system,
        "version": 1,
        "frozen_at": frozen_at,
        "files": {"questions.jsonl": sha256_bytes(raw), "metadata.json": sha256_file(folder / "metadata.json")},
        "n_questions": len(questions),
        "gates": [g.model_dump(mode="json") for g in gates],
        "settings": {
            "imported_from": "sqb reference release",
            "source_file": spec.questions,
            "frozen_at_note": (
                "frozen_at is the release's generation date; the import copies a set frozen by the release"
            ),
        },
    }
    unsealed = parse_record(FrozenSet, frozen_data, f"{spec.system} FROZEN.json").model_dump(mode="json")
    frozen = parse_record(FrozenSet, with_seal(unsealed), f"{spec.system} FROZEN.json")
    _write_once(folder / "FROZEN.json", frozen.model_dump(mode="json"))
    rel = str(folder.relative_to(ws.root))
    entries, problems = read_ledger(ws.ledger)
    if problems:
        raise BadInput(f"{ws.ledger}: broken ledger ({problems[0]})")
    if find_entry(entries, rel) is None:
        append_entry(
            ws.ledger,
            {
                "kind": "import",
                "instance_id": instance.instance_id,
                "system": spec.system,
                "version": 1,
                "path": rel,
                "frozen_seal": frozen.seal,
                "frozen_at": frozen_at,
            },
        )
    return folder, frozen, questions


# --------------------------------------------------------------------------- runs


def judgment_from_release(
    row: dict[str, Any], where: str, provenance: str = "judge", adjudication: dict[str, Any] | None = None
) -> Judgment:
    """Turn one ``outcomes_*.jsonl`` line into a :class:`Judgment`.

    ``supporting_bibcodes`` -> ``supporting_ids``; evidence ``bibcode`` -> ``id``;
    ``judge_model``/``judge_protocol`` -> ``judge``; every other field is kept as is.
    Unknown labels and citation-rule violations are flagged in ``needs_review``.
    """
    data = dict(row)
    for key in ("question_id", "outcome", "premise_status"):
        if key not in data:
            raise BadInput(f"{where}: missing {key}")
    evidence = []
    for item in data.pop("evidence", []) or []:
        item = dict(item)
        item["id"] = item.pop("bibcode", item.get("id", ""))
        evidence.append(item)
    supporting = list(data.pop("supporting_bibcodes", data.pop("supporting_ids", [])) or [])
    judge = {
        "name": "sqb-release-llm",
        "model": data.pop("judge_model", None),
        "protocol": data.pop("judge_protocol", None),
    }
    review = _label_problems(data["outcome"], data["premise_status"])
    if data["outcome"] in ENGAGED_OUTCOMES and not supporting:
        review.append("engaged outcome without cited evidence")
    if data["outcome"] == "not_addressed" and supporting:
        review.append("not_addressed with citations")
    record = {
        **data,
        "evidence": evidence,
        "supporting_ids": supporting,
        "judge": judge,
        "provenance": provenance,
        "needs_review": review,
    }
    if adjudication is not None:
        record["adjudication"] = adjudication
    return parse_record(Judgment, record, where)


def retrieval_from_release(row: dict[str, Any], where: str, corpus_seal: str) -> Retrieval:
    """Turn one ``*_top8*.jsonl`` line into a :class:`Retrieval` (ids and scores, no text)."""
    data = dict(row)
    docs = []
    for doc in data.pop("documents", []) or []:
        doc = dict(doc)
        doc["id"] = doc.pop("bibcode", doc.get("id", ""))
        if doc.get("score") is None:  # v1 ships no per-document scores: say so, keep a number
            doc["score"] = 0.0
            doc["score_available"] = False
        docs.append(doc)
    record = {
        **data,
        "retriever": {"method": "dense", "model": data.pop("retrieval_model", None), "source": "sqb release"},
        "corpus_id": data.pop("retrieval_corpus", ""),
        "corpus_seal": corpus_seal,
        "k": data.pop("top_k", len(docs)),
        "documents": docs,
        "top1_similarity": data.pop("top1_similarity", None),
        "text_available": False,
        "text_note": NO_TEXT_NOTE,
    }
    for key in ("retrieval_model", "retrieval_corpus", "top_k"):
        record.pop(key, None)
    return parse_record(Retrieval, record, where)


def _write_run(
    release: Path,
    ws: Workspace,
    spec: SetSpec,
    instance: Instance,
    frozen_dir: Path,
    frozen: FrozenSet,
    questions: list[Question],
) -> Path:
    assert spec.labels, spec  # only sets with labels have a run
    labels_path = release / spec.labels
    adjudications = _rows_by_question(release / spec.adjudication) if spec.adjudication else {}
    judgments = {
        qid: judgment_from_release(row, f"{labels_path} ({qid})", spec.provenance, adjudications.get(qid))
        for qid, row in _rows_by_question(labels_path).items()
    }
    retrievals = {}
    future_seal = instance.future.seal if instance.future else ""
    if spec.retrieval:
        path = release / spec.retrieval
        retrievals = {
            qid: retrieval_from_release(row, f"{path} ({qid})", future_seal)
            for qid, row in _rows_by_question(path).items()
        }
    order = [q.question_id for q in questions]
    judged = [judgments[q] for q in order if q in judgments]
    retrieved = [retrievals[q] for q in order if q in retrievals]
    checks = _checks(instance, questions, judgments, retrievals if spec.retrieval else None, frozen)
    valid = not any(c["status"] == "failed" for c in checks)

    folder = ws.results / spec.instance_id / spec.system / spec.run_id
    _write_once(folder / "judgments.jsonl", [j.model_dump(mode="json") for j in judged], jsonl=True)
    _write_once(folder / "retrieval.jsonl", [r.model_dump(mode="json") for r in retrieved], jsonl=True)
    metrics = compute_metrics(questions, judged, retrieved, instance.cutoff)
    reference = read_json(release / spec.release_metrics) if spec.release_metrics else None
    ours = output_dict(metrics.release)
    metrics = metrics.updated(run_id=spec.run_id, instance_id=instance.instance_id, system=spec.system, valid=valid)
    if reference is not None:
        matches = {k: ours[k] == v for k, v in reference.items() if k in ours}
        metrics = metrics.updated(reference_metrics=reference, reference_match=matches)
    _write_once(folder / "metrics.json", output_dict(metrics))
    judge_models = sorted({j.judge.model for j in judged if j.judge.model})
    protocols = sorted({j.judge.protocol for j in judged if j.judge.protocol})
    first = next(iter(retrievals.values()), None)
    run = Run(
        schema_version="1",
        run_id=spec.run_id,
        instance_id=instance.instance_id,
        instance_seal=instance.seal,
        system=spec.system,
        frozen_path=str(frozen_dir.relative_to(ws.root)),
        frozen_seal=frozen.seal,
        retriever=RunRetriever.model_validate(
            {
                **(first.retriever if first else {}),
                "k": first.k if first else None,
                "corpus_id": first.corpus_id if first else None,
                "text_available": False,
                "note": NO_TEXT_NOTE if spec.retrieval else NO_RETRIEVAL,
            }
        ),
        judge=RunJudge(name="sqb-release-llm", models=judge_models, protocols=protocols, provenance=spec.provenance),
        valid=valid,
        leakage=checks,
        imported_from=ImportedFrom(
            release="sqb",
            files={
                rel: sha256_file(release / rel)
                for rel in [spec.questions, spec.labels, spec.retrieval, spec.release_metrics, spec.adjudication]
                if rel
            },
        ),
        n_questions=len(questions),
    )
    _write_once(folder / "RUN.json", output_dict(run))
    return folder


def _checks(
    instance: Instance,
    questions: list[Question],
    judgments: dict[str, Judgment],
    retrievals: dict[str, Retrieval] | None,
    frozen: FrozenSet,
) -> list[dict[str, Any]]:
    """The leakage checks that the release's data allow; the rest are skipped with a reason.

    ``retrievals`` is None when the release ships no retrieval file for the set: the
    citation check is then skipped and ids are aligned between questions and labels only."""
    cutoff = instance.cutoff
    ids = [q.question_id for q in questions]
    checks = []

    def add(name: str, bad: list[str], ok_reason: str, bad_reason: str, skipped: str | None = None) -> None:
        # the same shape as backtest.validity.leakage.CheckResult.as_dict(), plus "skipped" with its reason
        if skipped:
            checks.append(
                {
                    "name": name,
                    "status": "skipped",
                    "summary": skipped,
                    "reason": skipped,
                    "n_offenders": 0,
                    "offenders": [],
                }
            )
        else:
            checks.append(
                {
                    "name": name,
                    "status": "failed" if bad else "passed",
                    "summary": bad_reason if bad else ok_reason,
                    "n_offenders": len(bad),
                    "offenders": sorted(bad)[:20],
                }
            )

    add(
        "cutoff",
        [q.question_id for q in questions if q.cutoff_date != cutoff],
        f"every question's cutoff is {cutoff}",
        "questions with another cutoff",
    )
    add("evidence_in_past", [], "", "", skipped=EVIDENCE_SKIP)
    add(
        "retrieved_in_future",
        [],
        "",
        "",
        skipped="the future corpus (ADS) is not held: retrieved documents' dates cannot be checked by day",
    )
    shown = {q: {d.id for d in r.documents} for q, r in (retrievals or {}).items()}
    uncited = [q for q, j in judgments.items() if not set(j.supporting_ids) <= shown.get(q, set())]
    add(
        "citations_shown",
        uncited,
        "every cited id is among that question's retrieved documents",
        "judge cited documents outside the retrieved list",
        skipped=None if retrievals is not None else NO_RETRIEVAL,
    )
    unaligned = set(ids) ^ set(judgments)
    if retrievals is not None:
        unaligned |= set(ids) ^ set(retrievals)
    align = sorted(unaligned)
    add(
        "ids_aligned",
        align if len(set(ids)) == len(ids) else align + ["duplicate question ids"],
        "questions, retrieval and judgments name the same ids",
        "ids missing or extra",
    )
    windows = []
    if instance.past.window.end > cutoff:
        windows.append("past window ends after the cutoff")
    if instance.future and instance.future.window.start <= cutoff:
        windows.append("future window starts on or before the cutoff")
    add(
        "windows",
        windows,
        "past window ends on or before the cutoff; future window starts after it",
        "corpus windows overlap the cutoff",
    )
    add("corpora_disjoint", [], "", "", skipped="neither corpus is held: record overlap cannot be checked")
    add(
        "integrity",
        [] if frozen.seal and frozen.n_questions == len(questions) else ["FROZEN.json"],
        "the frozen set was sealed from the release's bytes",
        "frozen set does not match",
    )
    return checks


# --------------------------------------------------------------------------- helpers


def _label_problems(outcome: str, premise: str) -> list[str]:
    problems = []
    if outcome not in OUTCOMES:
        problems.append(f"unknown outcome label {outcome!r}")
    if premise not in PREMISE_STATUSES:
        problems.append(f"unknown premise_status label {premise!r}")
    return problems


def _write_once(path: Path, obj: Any, jsonl: bool | None = None) -> None:
    """Write JSON/JSONL unless the same bytes are already there; refuse a differing file."""
    if jsonl is None:
        jsonl = path.suffix == ".jsonl"
    tmp_writer = write_jsonl if jsonl else write_json
    if path.exists():
        scratch = path.with_name(f".{path.name}.check")
        tmp_writer(scratch, obj)
        same = scratch.read_bytes() == path.read_bytes()
        scratch.unlink()
        if not same:
            raise BadInput(f"{path}: exists with different content; import into an empty folder")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp_writer(path, obj)


def _write_bytes_once(path: Path, data: bytes) -> None:
    if path.exists():
        if path.read_bytes() != data:
            raise BadInput(f"{path}: exists with different content; import into an empty folder")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)
