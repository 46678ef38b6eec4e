"""Prospective instances: commit questions now, grade them when the future arrives.

A *commitment* is a folder that anyone can check later::

    prospective/<ID>/
      COMMITMENT.json          sealed: cutoff, future window, grading schedule, the declared
                               future-corpus query, judge and retriever settings, the root
      SHA256SUMS               ``sha256sum`` format over every committed file below
      instance.json            the sealed past-only instance (its future is declared, not built)
      past_manifest.json       the sealed past corpus manifest
      judge/<config>           the committed judge config, when one is used
      submissions/<system>/    each frozen set: questions.jsonl, metadata.json, FROZEN.json
      graded/<as-of>[-provisional]/   written later by ``grade``; not part of the commitment

Merkle root: leaf *i* is the sha256 of line *i* of ``SHA256SUMS``, normalised to the
UTF-8 bytes ``<lowercase hex digest><two spaces><path>`` without the newline (so a
``*`` binary marker does not matter), and each leaf binds a file's content to its path;
the lines are sorted by path (code-point order) when we write them, and a
foreign ``SHA256SUMS`` is taken in its own line order. The tree is
:func:`backtest.core.seal.merkle_root` (sha256 of the concatenated child digests, the last
node duplicated on odd levels). ``COMMITMENT.json`` is not in ``SHA256SUMS`` (it holds
the root); it is sealed, and every setting it records is also in the committed
``instance.json``, which the root covers — so the published root binds the settings too.

Modules: :mod:`~backtest.studies.prospective.records` (the files and their models),
:mod:`~backtest.studies.prospective.merkle` (the root over ``SHA256SUMS``),
:mod:`~backtest.studies.prospective.commit`, :mod:`~backtest.studies.prospective.verify`,
:mod:`~backtest.studies.prospective.grade` and :mod:`~backtest.studies.prospective.render` (``GRADE.md``).
"""
