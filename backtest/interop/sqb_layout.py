"""What the reference release (``sqb/``) holds: its instances and question sets, discovered from the files present.

:func:`discover_release` reads the release's data folders (``submissions/``, ``data/``,
``results/``, ``annotation/``) and returns a :class:`ReleasePlan`: the instances and
sets to import, and every other file there with the reason it is not imported —
a known kind (documentation, the submission template, a release report that our runs
recompute) goes to ``skipped``; a file no rule knows goes to ``unexpected``. Nothing is
left out silently. Folders outside the data folders (code, configs) are named in
``not_scanned``.

The rules, by path (``<name>`` a system, ``<YYYY>`` a cutoff year):

* ``submissions/<name>_L1/questions.jsonl`` — a set of the scaled instance
  ``sqb-astronomy-v1L`` (the paper's main table and its Section 9 decomposition), with
  ``data/annotations/outcomes_<name>_L.jsonl``, ``data/retrieval/<name>_L_top8.jsonl``
  and ``results/<name>_L/metrics.json`` when present;
* ``data/questions/astronomy_questions_v1.jsonl`` — the evidence-graph pilot
  (``sqb-astronomy-v1``/``evidence_graph_v1``) with its adjudicated labels; and
  ``submissions/<name>_v1/questions.jsonl`` — further sets of that instance, with
  ``outcomes_<name>_v1.jsonl``, ``<name>_top8_v1.jsonl``, ``results/<name>_v1/metrics.json``;
* ``submissions/prospective_2026/<name>/questions.jsonl`` — ``sqb-prospective-2026``,
  checked against its ``SHA256SUMS``;
* ``submissions/stress/c<YYYY>_<name>/questions.jsonl`` — the temporal stress test,
  one instance ``sqb-stress-c<YYYY>`` per cutoff (corpus manifests
  ``data/corpus_metadata/stress/c<YYYY>_past.json`` and ``_future.json``), with
  ``data/annotations/stress/c<YYYY>_<name>.jsonl`` and
  ``data/retrieval/stress/c<YYYY>_<name>_top8.jsonl``.

A ``metadata.json`` beside a set's questions is used as its metadata.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl, read_json
from backtest.core.records import SAFE_NAME

RUN_ID = "sqb-release"
SCANNED = ("submissions", "data", "results", "annotation")
V1L, V1, PROSPECTIVE = "sqb-astronomy-v1L", "sqb-astronomy-v1", "sqb-prospective-2026"
STRESS_PREFIX = "sqb-stress-c"
# the paper's table order; systems it does not name follow alphabetically (import order is ledger order)
PAPER_ORDER = ("random_claim", "citation_leader", "direct_llm", "review_future_work", "tension_llm", "tension_template")


@dataclass(frozen=True)
class InstanceSpec:
    """One release instance: cutoff, the release manifests, and the corpus windows."""

    instance_id: str
    cutoff: str
    past_manifest: str
    future_manifest: str
    past_window: tuple[str, str]
    future_window: tuple[str, str] | None


@dataclass(frozen=True)
class SetSpec:
    """One frozen question set in the release, with its labels when it has any."""

    instance_id: str
    system: str
    questions: str
    metadata: str | None = None
    labels: str | None = None
    retrieval: str | None = None
    release_metrics: str | None = None
    adjudication: str | None = None
    run_id: str = RUN_ID
    provenance: str = "judge"
    sums: str | None = None

    def files(self) -> list[str]:
        """Every release file this set reads."""
        return [
            p
            for p in (
                self.questions,
                self.metadata,
                self.labels,
                self.retrieval,
                self.release_metrics,
                self.adjudication,
                self.sums,
            )
            if p
        ]


@dataclass
class ReleasePlan:
    """The instances and sets to import, and every other release file with why it is not imported."""

    instances: list[InstanceSpec]
    sets: list[SetSpec]
    annotation: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    unexpected: list[dict[str, str]] = field(default_factory=list)
    not_scanned: list[str] = field(default_factory=list)


FIXED_INSTANCES = {
    V1L: InstanceSpec(
        V1L,
        "2020-12-31",
        "data/corpus_metadata/corpus_a_large_manifest.json",
        "data/corpus_metadata/corpus_b_large_manifest.json",
        ("2015-01-01", "2020-12-31"),
        ("2021-01-01", "2026-07-01"),
    ),
    V1: InstanceSpec(
        V1,
        "2020-12-31",
        "data/corpus_metadata/corpus_a_manifest.json",
        "data/corpus_metadata/corpus_b_manifest.json",
        ("2015-01-01", "2020-12-31"),
        ("2021-01-01", "2026-07-01"),
    ),
    PROSPECTIVE: InstanceSpec(
        PROSPECTIVE,
        "2026-08-17",
        "data/corpus_metadata/prospective_2026_past_manifest.json",
        "data/corpus_metadata/prospective_2026_future_manifest.json",
        ("2015-01-01", "2026-08-17"),
        None,
    ),
}

PILOT = SetSpec(
    V1,
    "evidence_graph_v1",
    "data/questions/astronomy_questions_v1.jsonl",
    metadata="submissions/evidence_graph_v1/metadata.json",
    labels="data/annotations/outcomes_v1.jsonl",
    retrieval="data/retrieval/astronomy_top8_v1.jsonl",
    release_metrics="results/astronomy_v1/metrics.json",
    adjudication="data/annotations/adjudication_v1.jsonl",
    run_id="sqb-release-adjudicated",
    provenance="adjudicated",
)

_NAME = r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*?)"
_L1 = re.compile(rf"submissions/{_NAME}_L1/questions\.jsonl")
_V1 = re.compile(rf"submissions/{_NAME}_v1/questions\.jsonl")
_PROSPECTIVE = re.compile(rf"submissions/prospective_2026/{_NAME}/questions\.jsonl")
_STRESS = re.compile(rf"submissions/stress/c(?P<year>[0-9]{{4}})_{_NAME}/questions\.jsonl")
_SHEET = re.compile(r"annotation/annotator_[^/]+_sheet\.csv")

# known files that are not imported, with the reason (first match wins)
KNOWN_SKIPS = [
    (re.compile(r".*\.md|.*\.html"), "documentation"),
    (re.compile(r"submissions/example_system/.*"), "the template for new submissions, not an evaluated system"),
    (
        re.compile(r"annotation/.*"),
        "annotation materials (the labels are the annotator sheets, decoded with decode.json)",
    ),
    (
        re.compile(r"results/[^/]+/comparison\.json"),
        "the release's comparison table: `backtest compare` over the imported runs rebuilds it",
    ),
    (
        re.compile(r"results/stress/summary[^/]*\.json"),
        "the release's stress summary: `backtest stress --from-runs` over the imported runs rebuilds it",
    ),
    (
        re.compile(r"results/[^/]+/(per_question_results\.csv|specificity\.json)"),
        "a release report of a run: the imported run recomputes its metrics from the labels",
    ),
    (
        re.compile(r"results/judge_validation/.*"),
        "the release's judge-validation study (judge variants on the same questions), not a system's run",
    ),
]


def _safe(name: str) -> bool:
    return bool(SAFE_NAME.fullmatch(name)) and ".." not in name


def _sort_key(spec: SetSpec) -> tuple[int, str]:
    order = PAPER_ORDER.index(spec.system) if spec.system in PAPER_ORDER else len(PAPER_ORDER)
    return order, spec.system


def _present(files: set[str], path: str) -> str | None:
    return path if path in files else None


def _round(
    files: list[str], pattern: re.Pattern[str], instance_id: str, folder: str, labels: str, retrieval: str, results: str
) -> list[SetSpec]:
    """The sets of one evaluation round (``<name>_L1`` or ``<name>_v1``) with the files named after each system."""
    present = set(files)
    found = [
        SetSpec(
            instance_id,
            name,
            path,
            metadata=_present(present, f"{folder.format(name)}/metadata.json"),
            labels=_present(present, f"data/annotations/{labels.format(name)}.jsonl"),
            retrieval=_present(present, f"data/retrieval/{retrieval.format(name)}.jsonl"),
            release_metrics=_present(present, f"results/{results.format(name)}/metrics.json"),
        )
        for path in files
        if (m := pattern.fullmatch(path)) and _safe(name := m["name"])
    ]
    return sorted(found, key=_sort_key)


def release_files(release: Path) -> tuple[list[str], list[str]]:
    """``(files under the scanned folders, release-relative and sorted; top-level entries not scanned)``."""
    files = sorted(
        p.relative_to(release).as_posix()
        for folder in SCANNED
        if (release / folder).is_dir()
        for p in (release / folder).rglob("*")
        if p.is_file() or p.is_symlink()
    )
    others = sorted(p.name + ("/" if p.is_dir() else "") for p in release.iterdir() if p.name not in SCANNED)
    return files, others


def discover_release(release: Path, annotation: bool = True) -> ReleasePlan:
    """Every instance and set the release at ``release`` holds (module docstring), and what is left."""
    files, not_scanned = release_files(release)
    present = set(files)
    sets: list[SetSpec] = []
    problems: dict[str, str] = {}

    sets += _round(files, _L1, V1L, "submissions/{}_L1", "outcomes_{}_L", "{}_L_top8", "{}_L")
    if PILOT.questions in present:
        sets.append(PILOT)
    sets += _round(files, _V1, V1, "submissions/{}_v1", "outcomes_{}_v1", "{}_top8_v1", "{}_v1")

    sums = _present(present, "submissions/prospective_2026/SHA256SUMS")
    for path in files:
        if (m := _PROSPECTIVE.fullmatch(path)) and _safe(m["name"]):
            meta = _present(present, f"submissions/prospective_2026/{m['name']}/metadata.json")
            sets.append(SetSpec(PROSPECTIVE, m["name"], path, metadata=meta, sums=sums))

    stress: dict[str, list[SetSpec]] = {}
    for path in files:
        if (m := _STRESS.fullmatch(path)) and _safe(m["name"]):
            year, name = m["year"], m["name"]
            stem = f"c{year}_{name}"
            stress.setdefault(year, []).append(
                SetSpec(
                    f"{STRESS_PREFIX}{year}",
                    name,
                    path,
                    metadata=_present(present, f"submissions/stress/{stem}/metadata.json"),
                    labels=_present(present, f"data/annotations/stress/{stem}.jsonl"),
                    retrieval=_present(present, f"data/retrieval/stress/{stem}_top8.jsonl"),
                )
            )

    instances = [FIXED_INSTANCES[i] for i in (V1L, V1, PROSPECTIVE) if any(s.instance_id == i for s in sets)]
    for year in sorted(stress):
        group = sorted(stress[year], key=_sort_key)
        spec, why = _stress_instance(release, present, year, group)
        if spec is None:
            for s in group:
                for path in s.files():
                    problems[path] = why
            continue
        instances.append(spec)
        sets += group

    used = {p for s in sets for p in s.files()}
    used |= {p for i in instances for p in (i.past_manifest, i.future_manifest)}
    sheets = [p for p in files if _SHEET.fullmatch(p)]
    annotation_files = sheets + ["annotation/decode.json"] if annotation and "annotation/decode.json" in present else []
    used |= set(annotation_files)

    plan = ReleasePlan(instances=instances, sets=sets, annotation=annotation_files, not_scanned=not_scanned)
    for path in files:
        if path in used:
            continue
        if path in problems:
            plan.unexpected.append({"path": path, "reason": problems[path]})
        elif not annotation and (path == "annotation/decode.json" or _SHEET.fullmatch(path)):
            plan.skipped.append({"path": path, "reason": "human annotation not imported (--no-annotation)"})
        elif reason := next((why for pattern, why in KNOWN_SKIPS if pattern.fullmatch(path)), None):
            plan.skipped.append({"path": path, "reason": reason})
        else:
            plan.unexpected.append({"path": path, "reason": _unexpected_reason(path)})
    return plan


def _unexpected_reason(path: str) -> str:
    if path.startswith(("data/annotations/", "data/retrieval/", "results/")):
        return "no question set in the release matches this file (no import rule pairs it with a questions.jsonl)"
    if path.startswith("submissions/"):
        return (
            "not a questions.jsonl of a known layout "
            "(<name>_L1/, <name>_v1/, prospective_2026/<name>/, stress/c<YYYY>_<name>/)"
        )
    return "no import rule for this file"


def _stress_instance(
    release: Path, present: set[str], year: str, sets: list[SetSpec]
) -> tuple[InstanceSpec | None, str]:
    """The instance of one stress cutoff from its manifests (and the retrieval files' future window)."""
    past_rel = f"data/corpus_metadata/stress/c{year}_past.json"
    future_rel = f"data/corpus_metadata/stress/c{year}_future.json"
    missing = [p for p in (past_rel, future_rel) if p not in present]
    if missing:
        return None, f"stress cutoff c{year} not imported: its corpus manifest {missing[0]} is not in the release"
    past, future = read_json(release / past_rel), read_json(release / future_rel)
    if not isinstance(past, dict) or not isinstance(future, dict):
        raise BadInput(f"{release / past_rel}: expected JSON objects in the stress corpus manifests")
    cutoff = _date(past.get("cutoff_date") or f"{year}-12-31", release / past_rel, "cutoff_date")
    if cutoff.year != int(year):
        raise BadInput(f"{release / past_rel}: cutoff_date {cutoff} is not in {year}, the year its name says")
    first_year = (past.get("publication_year") or {}).get("min")
    if not isinstance(first_year, int):
        raise BadInput(f"{release / past_rel}: publication_year.min (the past window's first year) is missing")
    window = _retrieval_window(release, [s.retrieval for s in sets if s.retrieval])
    if window is None:
        years = future.get("validation_window") or {}
        if not isinstance(years.get("min"), int) or not isinstance(years.get("max"), int):
            raise BadInput(f"{release / future_rel}: validation_window min/max (the future window's years) missing")
        window = (f"{years['min']}-01-01", f"{years['max']}-12-31")
    return (
        InstanceSpec(
            f"{STRESS_PREFIX}{year}",
            cutoff.isoformat(),
            past_rel,
            future_rel,
            (f"{first_year}-01-01", cutoff.isoformat()),
            window,
        ),
        "",
    )


def _retrieval_window(release: Path, paths: list[str]) -> tuple[str, str] | None:
    """The future window the release retrieved from (``retrieval_corpus_start``/``_end``), the same in every file."""
    seen = {}
    for rel in paths:
        for n, row in iter_jsonl(release / rel):
            start, end = row.get("retrieval_corpus_start"), row.get("retrieval_corpus_end")
            if start and end:
                seen[(str(start), str(end))] = f"{rel}:{n}"
    if len(seen) > 1:
        (a, where_a), (b, where_b) = list(seen.items())[:2]
        raise BadInput(
            f"{release}: retrieval windows differ within one stress cutoff: {a} ({where_a}) vs {b} ({where_b})"
        )
    return next(iter(seen), None)


def _date(value: object, where: Path, what: str) -> dt.date:
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise BadInput(f"{where}: {what} {value!r} is not a YYYY-MM-DD date") from None
