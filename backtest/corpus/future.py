"""Opening the future corpus: for the scorer and retrievers only.

Generators never import this module (a test checks it); they receive a
:class:`~backtest.corpus.store.PastCorpus`. The future corpus is opened only after
its manifest seal matches the instance and its files verify.
"""

from __future__ import annotations

from backtest.core.errors import CheckFailed
from backtest.core.records import Instance
from backtest.core.workspace import Workspace
from backtest.corpus.build import load_manifest, verify_corpus
from backtest.corpus.store import CorpusStore


def open_future_corpus(instance: Instance, ws: Workspace, verify: bool = True) -> CorpusStore:
    """The verified future corpus of ``instance``; CheckFailed if it is missing, foreign or drifted."""
    if instance.future is None:
        raise CheckFailed(f"instance {instance.instance_id} has no future corpus yet (prospective: grade it when due)")
    manifest = load_manifest(instance.future.corpus_id, ws)
    if manifest.role != "future":
        raise CheckFailed(
            f"corpus {manifest.corpus_id} has role {manifest.role!r}; retrieval reads only the future corpus"
        )
    if manifest.seal != instance.future.seal:
        raise CheckFailed(f"future corpus {manifest.corpus_id}: seal differs from instance {instance.instance_id}")
    if verify:
        verify_corpus(manifest, ws).raise_if_failed()
    return CorpusStore(manifest, ws)
