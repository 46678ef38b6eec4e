"""Top-k retrieval from the isolated future corpus (scorer side only; generators never import this).

Members of :data:`RETRIEVERS`: ``bm25`` (bm25s, Okapi scoring equal to rank-bm25),
``dense`` (sentence-transformers + faiss exact or approximate) and ``hybrid``
(reciprocal-rank fusion). Entry points: :func:`retrieve_questions`,
:func:`retrieve_frozen`.
"""

from backtest.retrieve.pipeline import retrieve_frozen, retrieve_questions, write_retrievals
from backtest.retrieve.protocol import RETRIEVERS, FutureDocs, Retriever, get_retriever, load_future_docs

__all__ = [
    "RETRIEVERS",
    "FutureDocs",
    "Retriever",
    "get_retriever",
    "load_future_docs",
    "retrieve_frozen",
    "retrieve_questions",
    "write_retrievals",
]
