"""The Merkle root over a folder's ``SHA256SUMS`` (the rule: :mod:`backtest.studies.prospective`)."""

from __future__ import annotations

from pathlib import Path

from backtest.core import sums
from backtest.core.seal import merkle_root, sha256_text

LEAF_RULE = (
    "leaf i = sha256 of line i of SHA256SUMS normalised to '<lowercase hex>  <path>' (UTF-8, no newline); "
    "lines sorted by path; "
    "root = backtest.core.seal.merkle_root(leaves): sha256 of concatenated child digests, "
    "last node duplicated on odd levels"
)


def sum_entries(path: Path) -> list[tuple[str, str]]:
    """``(digest, path)`` pairs of a SHA256SUMS file in line order (parsed by :mod:`backtest.core.sums`)."""
    return [(digest, rel) for rel, digest in sums.parse_sums(path).items()]


def leaf_digests(entries: list[tuple[str, str]]) -> list[str]:
    """Merkle leaves for ``(digest, path)`` entries of a SHA256SUMS file, in its line order."""
    return [sha256_text(f"{digest}  {path}") for digest, path in entries]


def sums_root(entries: list[tuple[str, str]]) -> str:
    """The Merkle root over a SHA256SUMS file's entries (the rule: :mod:`backtest.studies.prospective`)."""
    return merkle_root(leaf_digests(entries))
