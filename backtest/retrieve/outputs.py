"""The typed file of the index cache: ``INDEX.json`` (:class:`IndexMeta`) in every cached index folder
(:mod:`backtest.retrieve.index_store`). ``backtest schema index`` prints it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from backtest.core.records import Output


class IndexInputs(BaseModel):
    """Everything that identifies an index: the index format, the method, the corpus id and seal, and the
    method's parameters (for embeddings, the model fingerprint). The cache key is a short sha256 of them."""

    model_config = ConfigDict(extra="forbid")

    format: str
    method: str
    corpus_id: str
    corpus_seal: str
    params: dict[str, Any]


class IndexMeta(Output):
    """``INDEX.json`` of a cached retrieval index: its key, the inputs it was built from, the number of
    documents and the sha256 of every index file. An index is reused only when all of it matches."""

    key: str
    inputs: IndexInputs
    n_docs: int
    files: dict[str, str]
