"""Create, load and verify instances.

An instance binds a cutoff date T, a past corpus (window end ≤ T, every record
dated ≤ T) and a future corpus (window start > T, every record dated > T), plus
the retrieval and judge settings used to score it. It is sealed; anything that
breaks the cutoff, or a manifest whose seal does not verify, is refused.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import read_json, write_json
from backtest.core.records import CorpusManifest, CorpusRef, Instance, JudgeSettings, RetrievalSettings, parse_record
from backtest.core.seal import compute_seal, sha256_file, with_seal
from backtest.core.workspace import Workspace
from backtest.corpus.build import load_manifest, manifest_text, verify_corpus
from backtest.corpus.store import CorpusStore, PastCorpus


def _check_past(manifest: CorpusManifest, store: CorpusStore, cutoff: dt.date) -> list[str]:
    problems = []
    if manifest.role != "past":
        problems.append(f"{manifest.corpus_id}: role is {manifest.role!r}, expected past")
    if manifest.window.end > cutoff:
        problems.append(
            f"past corpus {manifest.corpus_id} window ends {manifest.window.end}, after the cutoff {cutoff}"
        )
    late = sorted(i for i, d in store.dates.items() if d > cutoff)
    if late:
        problems.append(
            f"past corpus {manifest.corpus_id} holds {len(late)} record(s) dated after the cutoff {cutoff}, "
            f"e.g. {late[0]} ({store.dates[late[0]]})"
        )
    return problems


def _check_future(manifest: CorpusManifest, store: CorpusStore, cutoff: dt.date) -> list[str]:
    problems = []
    if manifest.role != "future":
        problems.append(f"{manifest.corpus_id}: role is {manifest.role!r}, expected future")
    if manifest.window.start <= cutoff:
        problems.append(
            f"future corpus {manifest.corpus_id} window starts {manifest.window.start}, not after the cutoff {cutoff}"
        )
    early = sorted(i for i, d in store.dates.items() if d <= cutoff)
    if early:
        problems.append(
            f"future corpus {manifest.corpus_id} holds {len(early)} record(s) "
            f"dated on or before the cutoff {cutoff}, e.g. {early[0]} ({store.dates[early[0]]})"
        )
    return problems


def _verified_store(manifest: CorpusManifest, ws: Workspace) -> CorpusStore:
    report = verify_corpus(manifest, ws)
    if not report.ok:
        raise CheckFailed(f"corpus {manifest.corpus_id} does not verify: {report.problems[0]}", report.problems)
    return CorpusStore(manifest, ws)


def create_instance(
    instance_id: str,
    cutoff: dt.date,
    past: str | Path,
    future: str | Path | None,
    ws: Workspace,
    retrieval: RetrievalSettings | None = None,
    judge_config: str | None = None,
    domain: str = "",
    future_declaration: dict | None = None,
    reproduce: bool = False,
) -> Instance:
    """Seal a new instance after checking both corpora against the cutoff, by day.

    Any violation is refused with one line (CheckFailed, exit 1) that names the offending
    corpus and an offending record. With ``reproduce`` the instance file already in
    ``manifests/instances/<id>.json`` must come out byte for byte (it is then left as is).
    """
    past_manifest = load_manifest(past, ws)
    problems = _check_past(past_manifest, _verified_store(past_manifest, ws), cutoff)
    future_ref = None
    if future is not None:
        future_manifest = load_manifest(future, ws)
        problems += _check_future(future_manifest, _verified_store(future_manifest, ws), cutoff)
        future_ref = CorpusRef(
            corpus_id=future_manifest.corpus_id, seal=future_manifest.seal, window=future_manifest.window
        )
    elif not future_declaration:
        raise BadInput("an instance needs a future manifest, or a declared future query and window (prospective)")
    if problems:
        raise CheckFailed(f"instance {instance_id} refused: " + "; ".join(problems))
    judge = JudgeSettings()
    if judge_config:
        path = Path(judge_config)
        if not path.is_file():
            raise BadInput(f"{judge_config}: no such judge config")
        judge = JudgeSettings(name=path.stem, config=str(judge_config), config_sha256=sha256_file(path))
    data = Instance(
        instance_id=instance_id,
        cutoff=cutoff,
        domain=domain,
        past=CorpusRef(corpus_id=past_manifest.corpus_id, seal=past_manifest.seal, window=past_manifest.window),
        future=future_ref,
        future_declaration=future_declaration,
        retrieval=retrieval or RetrievalSettings(),
        judge=judge,
    ).model_dump(mode="json")
    sealed = with_seal(data)
    path = ws.instance_path(instance_id)
    if reproduce:
        if not path.is_file():
            raise BadInput(f"{path}: no committed instance to reproduce (create it once without --reproduce)")
        if path.read_text(encoding="utf-8") != manifest_text(sealed):
            old = read_json(path)
            changed = (
                sorted(k for k in set(old) | set(sealed) if k != "seal" and old.get(k) != sealed.get(k))
                if isinstance(old, dict)
                else []
            )
            raise CheckFailed(
                f"{path}: re-creating the instance does not reproduce the committed file "
                f"(differs in {', '.join(changed) or 'formatting'}); it was left unchanged"
            )
    else:
        write_json(path, sealed)
    return Instance.model_validate(sealed)


def load_instance(instance_id: str, ws: Workspace) -> Instance:
    """Load ``manifests/instances/<id>.json`` (or a path), checking its seal."""
    path = Path(instance_id) if instance_id.endswith(".json") else ws.instance_path(instance_id)
    if not path.is_file():
        raise BadInput(
            f"unknown instance {instance_id!r} (no {path}); "
            "create it with `backtest instance create` or `make instances`"
        )
    data = read_json(path)
    if not isinstance(data, dict):
        raise BadInput(f"{path}: an instance must be a JSON object")
    instance = parse_record(Instance, data, str(path))
    if compute_seal(data) != instance.seal:
        raise CheckFailed(f"instance {instance.instance_id}: seal does not match its contents ({path})")
    return instance


def verify_instance(instance: Instance, ws: Workspace) -> list[str]:
    """Re-check the instance: its corpora verify, their seals match, and the cutoff holds."""
    problems: list[str] = []
    refs = [("past", instance.past)] + ([("future", instance.future)] if instance.future else [])
    for role, ref in refs:
        manifest = load_manifest(ref.corpus_id, ws)
        if manifest.seal != ref.seal:
            problems.append(
                f"{role} corpus {ref.corpus_id}: manifest seal {manifest.seal[:12]}… "
                f"differs from the instance's {ref.seal[:12]}…"
            )
            continue
        report = verify_corpus(manifest, ws)
        problems += report.problems
        if report.ok:
            store = CorpusStore(manifest, ws)
            problems += (_check_past if role == "past" else _check_future)(manifest, store, instance.cutoff)
    if instance.judge.config and instance.judge.config_sha256:
        path = Path(instance.judge.config)
        if not path.is_absolute():
            path = ws.root / path
        if not path.is_file():
            problems.append(f"judge config {instance.judge.config} is missing")
        elif sha256_file(path) != instance.judge.config_sha256:
            problems.append(f"judge config {instance.judge.config} changed since the instance was sealed")
    return problems


def open_past_corpus(instance: Instance, ws: Workspace, verify: bool = False) -> PastCorpus:
    """The past corpus of ``instance``, the one corpus object generators may hold."""
    manifest = load_manifest(instance.past.corpus_id, ws)
    if manifest.seal != instance.past.seal:
        raise CheckFailed(f"past corpus {manifest.corpus_id} seal differs from instance {instance.instance_id}")
    return PastCorpus(manifest, ws, instance.cutoff, verify=verify)
