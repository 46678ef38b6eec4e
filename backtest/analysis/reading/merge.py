"""Merging exports made in batches (``annotate merge``): items or pairs, decode files, each reader's labels and
the adjudication, into one set with one sampling design (or a line saying why it has none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence, TypedDict

from backtest.analysis.outputs import Decode
from backtest.analysis.reading.adjudication import ADJUDICATED
from backtest.analysis.reading.export import prepare_out, write_export
from backtest.analysis.reading.items import AnnotationItem, Label, PairItem, PairLabel, read_records
from backtest.analysis.reading.sheets import PAIR_SHEET_COLUMNS, SHEET_COLUMNS
from backtest.core.errors import BadInput
from backtest.core.fileio import iter_jsonl, read_text_file, write_jsonl
from backtest.core.records import output_dict, read_output


class MergedDesign(TypedDict, total=False):
    """The merged batches' sampling ``design`` (``decode.json``'s), or ``no_design``: why there is none."""

    design: dict[str, Any]
    no_design: str


class MergeSummary(TypedDict):
    """:func:`merge_exports`: the folder written, its items, its readers, and why it has no design (if not)."""

    out: str
    n: int
    raters: list[str]
    no_design: str | None


def _merged_design(metas: Sequence[dict[str, Any]]) -> MergedDesign:
    """The design of merged batches: their runs' samples together, when every batch recorded one of the same
    kind and no run was drawn from twice; else none, and ``no_design`` says why (``estimate`` repeats it)."""
    designs = [d for m in metas if (d := m.get("design")) is not None]
    if not designs or len(designs) != len(metas):
        return {"no_design": "a batch recorded no sampling design (exported before designs were recorded)"}
    if len({(d["kind"], d.get("stratify")) for d in designs}) != 1:
        return {"no_design": "its batches were drawn under different designs (simple random and stratified)"}
    runs: dict[str, Any] = {}
    for d in designs:
        twice = sorted(set(d["runs"]) & set(runs))
        if twice:
            return {
                "no_design": f"two of its batches sampled the same run ({twice[0]}): two samples of one run drawn "
                "apart are not one simple random sample of it; estimate from one batch, or export one sample of "
                "the run with the --per-run you want"
            }
        runs.update(d["runs"])
    first = designs[0]
    seeds = {d["seed"] for d in designs}
    per_run = {d.get("per_run") for d in designs}
    design: dict[str, Any] = {"kind": first["kind"], "runs": runs}
    if len(seeds) == 1 and first.get("seed") is not None:
        design["seed"] = first["seed"]
    if len(per_run) == 1 and first.get("per_run") is not None:
        design["per_run"] = first["per_run"]
    if first.get("stratify"):
        design["stratify"] = first["stratify"]
    return {"design": design}


def merge_exports(sources: Sequence[str | Path], out: str | Path) -> MergeSummary:
    """Merge exports made in batches (``--first-item`` numbering) into one set: items or pairs, decode files,
    and each reader's labels (a reader must have labelled every batch or none). Item ids must not clash."""
    dirs = [Path(d) for d in sources]
    if len(dirs) < 2:
        raise BadInput("merge needs at least two export folders")
    kinds = {("pairs" if (d / "pairs.jsonl").is_file() else "items") for d in dirs}
    if len(kinds) != 1:
        raise BadInput("cannot merge item exports with pair exports")
    kind = kinds.pop()
    out = Path(out)
    prepare_out(out)
    records, decode, metas = _read_batches(dirs, kind)
    raters = _raters(dirs)
    decisions = _decisions(dirs) if ADJUDICATED in raters else []
    design = _merged_design(metas) if kind == "items" else MergedDesign()
    guide, guide_name = _guide(dirs)
    columns = PAIR_SHEET_COLUMNS if kind == "pairs" else SHEET_COLUMNS
    meta = {"kind": kind, "n": len(records), "merged_from": metas, **design}
    write_export(out, records, columns, decode, guide, guide_name, meta)
    for rater in raters:
        model = PairLabel if kind == "pairs" else Label
        labels = sorted(
            (lab for d in dirs for lab in read_records(d / "labels" / f"{rater}.jsonl", model)),
            key=lambda lab: lab.item_id,
        )
        write_jsonl(
            out / "labels" / f"{rater}.jsonl", [lab.model_dump(mode="json", exclude_none=True) for lab in labels]
        )
    if ADJUDICATED in raters:
        decisions.sort(key=lambda r: (str(r.get("item_id")), str(r.get("field"))))
        write_jsonl(out / "adjudication.jsonl", decisions)
    return MergeSummary(out=str(out), n=len(records), raters=raters, no_design=design.get("no_design"))


def _read_batches(dirs: Sequence[Path], kind: str) -> tuple[list[Any], dict[str, Any], list[dict[str, Any]]]:
    """The batches' records in item order, their decode entries, and each batch's decode file less its items
    (as written); BadInput, one line, for an item id in two batches."""
    model = PairItem if kind == "pairs" else AnnotationItem
    records: list[Any] = []
    decode: dict[str, Any] = {}
    metas = []
    for d in dirs:
        batch = read_records(d / f"{kind}.jsonl", model)
        clash = sorted({r.item_id for r in batch} & {r.item_id for r in records})
        if clash:
            raise BadInput(
                f"{d}: item ids {', '.join(clash[:5])} are already in an earlier folder (export with --first-item)"
            )
        records += batch
        meta = output_dict(read_output(Decode, d / "decode.json"))  # merged as written
        decode.update(meta["items"])
        metas.append({k: v for k, v in meta.items() if k != "items"})
    records.sort(key=lambda r: r.item_id)
    return records, decode, metas


def _raters(dirs: Sequence[Path]) -> list[str]:
    """The readers with labels in the batches; BadInput, one line, for one who did not label every batch."""
    raters = sorted({p.stem for d in dirs for p in (d / "labels").glob("*.jsonl")})
    for rater in raters:
        missing = [str(d) for d in dirs if not (d / "labels" / f"{rater}.jsonl").is_file()]
        if missing:
            raise BadInput(f"reader {rater} has no labels in {', '.join(missing)}: merge labelled batches whole")
    return raters


def _decisions(dirs: Sequence[Path]) -> list[dict[str, Any]]:
    """Every batch's adjudication decisions, which go with its adjudicated labels (estimate checks one against the
    other); BadInput, one line, for a batch without them."""
    decisions: list[dict[str, Any]] = []
    for d in dirs:
        if not (d / "adjudication.jsonl").is_file():
            raise BadInput(f"{d}: labels/{ADJUDICATED}.jsonl without adjudication.jsonl; adjudicate it again first")
        decisions += [row for _, row in iter_jsonl(d / "adjudication.jsonl")]
    return decisions


def _guide(dirs: Sequence[Path]) -> tuple[str | None, str]:
    """The first batch's codebook (or pair guide) and its file name."""
    for d in dirs:
        for name in ("codebook.md", "guide.md"):
            if (d / name).is_file():
                return read_text_file(d / name), name
    return None, "codebook.md"
