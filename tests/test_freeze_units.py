"""Units without the corpora: SHA256SUMS, the ledger's hash chain under concurrent appends,
and the equivalence rules' pairs and clusters."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import pytest

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.sums import parse_sums, verify_sums, write_sums
from backtest.submit.ledger import GENESIS, append_entry, read_ledger
from backtest.text.equivalence import (
    EquivalenceRule,
    available_rules,
    clusters,
    get_rule,
    n_distinct,
    pairs_above,
    pairs_above_all,
    register_rule,
)

from .conftest import SQB

# --------------------------------------------------------------------------- SHA256SUMS


def test_sums_round_trip_and_name_every_changed_missing_or_extra_file(tmp_path, cli):
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.jsonl").write_text("{}\n")
    (tmp_path / "c.bin").write_bytes(b"\x00\x01")
    write_sums(tmp_path)
    assert sorted(parse_sums(tmp_path / "SHA256SUMS")) == ["a.txt", "c.bin", "sub/b.jsonl"]
    assert verify_sums(tmp_path).ok
    assert cli(["verify", tmp_path])[0] == 0
    (tmp_path / "a.txt").write_text("alphA\n")
    (tmp_path / "c.bin").unlink()
    (tmp_path / "sub" / "new.txt").write_text("x")
    report = verify_sums(tmp_path)
    assert (report.changed, report.missing, report.extra) == (["a.txt"], ["c.bin"], ["sub/new.txt"])
    code, _, err = cli(["verify", tmp_path / "SHA256SUMS"])
    assert code == 1
    assert (
        "a.txt: sha256 differs" in err
        and "c.bin: listed in SHA256SUMS but missing" in err
        and "sub/new.txt: not listed" in err
    )


@pytest.mark.parametrize(
    "line",
    ["zz  a.txt", "0" * 64 + "  ../escape", "0" * 64 + "  /etc/passwd", "0" * 64 + "a.txt", "0" * 63 + "  a.txt"],
)
def test_malformed_sums_lines_are_bad_input(tmp_path, line):
    (tmp_path / "SHA256SUMS").write_text(line + "\n")
    with pytest.raises(BadInput, match="SHA256SUMS:1"):
        parse_sums(tmp_path / "SHA256SUMS")


def test_binary_mode_marker_is_accepted(tmp_path):
    (tmp_path / "f").write_text("hi")
    write_sums(tmp_path)
    text = (tmp_path / "SHA256SUMS").read_text().replace("  f", " *f")
    (tmp_path / "SHA256SUMS").write_text(text)
    assert verify_sums(tmp_path).ok


@pytest.mark.skipif(not (SQB / "submissions" / "prospective_2026").is_dir(), reason="reference release not found")
def test_reference_prospective_sums_verify(cli):
    code, out, err = cli(["verify", SQB / "submissions" / "prospective_2026"])
    assert code == 0 and out.startswith("OK"), err


# --------------------------------------------------------------------------- ledger


def _fields(i: int) -> dict:
    return {
        "kind": "freeze",
        "instance_id": "inst",
        "system": f"s{i}",
        "version": 1,
        "path": f"frozen/inst/s{i}/v1",
        "frozen_seal": f"{i:064x}",
        "frozen_at": "2026-01-01T00:00:00Z",
    }


def test_concurrent_appends_keep_one_intact_chain(tmp_path):
    ledger = tmp_path / "frozen" / "LEDGER.jsonl"
    errors = []

    def worker(k: int) -> None:
        try:
            for j in range(5):
                append_entry(ledger, _fields(k * 10 + j))
        except Exception as exc:  # noqa: BLE001 - surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    entries, problems = read_ledger(ledger)
    assert problems == [] and len(entries) == 40
    assert entries[0].prev_hash == GENESIS and [e.seq for e in entries] == list(range(40))
    assert len({e.system for e in entries}) == 40


def test_torn_last_line_is_reported_and_blocks_appends(tmp_path):
    ledger = tmp_path / "LEDGER.jsonl"
    append_entry(ledger, _fields(1))
    append_entry(ledger, _fields(2))
    data = ledger.read_bytes()
    ledger.write_bytes(data[:-20])
    problems = read_ledger(ledger)[1]
    assert any("not terminated" in p for p in problems) and any("LEDGER.jsonl:2" in p for p in problems)
    with pytest.raises(CheckFailed, match="refusing to append"):
        append_entry(ledger, _fields(3))
    assert ledger.read_bytes() == data[:-20]


# --------------------------------------------------------------------------- equivalence rules


@dataclass
class FixedRule:
    """A rule over a fixed similarity matrix, for clustering tests."""

    matrix: np.ndarray
    threshold: float = 0.5
    name: str = "fixed"

    def similarity_matrix(self, texts):
        return self.matrix[: len(texts), : len(texts)]


def test_components_chain_but_complete_linkage_does_not():
    # 0~1 and 1~2, but 0 and 2 differ: a chain.
    chain = np.array([[1, 0.9, 0.1, 0], [0.9, 1, 0.8, 0], [0.1, 0.8, 1, 0], [0, 0, 0, 1]], dtype=float)
    rule = FixedRule(chain)
    texts = ["a", "b", "c", "d"]
    assert isinstance(rule, EquivalenceRule)
    assert pairs_above(texts, rule) == [(0, 1, 0.9), (1, 2, 0.8)]
    assert clusters(texts, rule) == [[0, 1, 2], [3]]
    complete = clusters(texts, rule, method="complete")
    assert sorted(map(len, complete)) == [1, 1, 2] and [3] in complete
    assert n_distinct(texts, rule) == 2 and n_distinct(texts, rule, method="complete") == 3
    with pytest.raises(BadInput):
        clusters(texts, rule, method="nope")
    assert clusters([], rule) == []


def test_registry_is_open_and_rules_have_their_defaults():
    assert {"tfidf", "embedding"} <= set(available_rules())
    assert get_rule("tfidf").threshold == 0.25 and get_rule("embedding").threshold == 0.77
    register_rule("fixed-test", lambda **kw: FixedRule(np.eye(2), **kw), replace=True)
    assert get_rule("fixed-test", threshold=0.3).threshold == 0.3
    with pytest.raises(ValueError):
        register_rule("tfidf", lambda **kw: FixedRule(np.eye(2)))
    with pytest.raises(BadInput, match="unknown equivalence rule"):
        get_rule("no-such-rule")


def test_tfidf_and_embedding_agree_on_a_paraphrase():
    texts = [
        "What drives radius inflation in hot Jupiters?",
        "What causes the radius inflation of hot Jupiters?",
        "How do galaxies quench their star formation?",
        "the of and?",
    ]
    tfidf = get_rule("tfidf")
    sims = tfidf.similarity_matrix(texts)
    assert sims.shape == (4, 4) and np.allclose(sims, sims.T)
    assert [(i, j) for i, j, _ in pairs_above(texts, tfidf)] == [(0, 1)]
    both = pairs_above_all(texts, [tfidf, get_rule("embedding")])
    assert [(i, j) for i, j, _ in both] == [(0, 1)] and both[0][2]["embedding"] >= 0.77
    assert clusters(texts, get_rule("embedding")) == [[0, 1], [2], [3]]


def test_sums_lines_split_on_newlines_only(tmp_path):
    """A file name holding \\f or \\v survives a SHA256SUMS round trip (str.splitlines would cut the line there),
    and a CRLF file still parses."""
    from backtest.core.sums import parse_sums, verify_sums, write_sums

    (tmp_path / "odd\fname.txt").write_text("a")
    (tmp_path / "plain.txt").write_text("b")
    write_sums(tmp_path)
    sums = parse_sums(tmp_path / "SHA256SUMS")
    assert set(sums) == {"odd\fname.txt", "plain.txt"}
    assert verify_sums(tmp_path).ok
    crlf = tmp_path / "crlf" / "SHA256SUMS"
    crlf.parent.mkdir()
    crlf.write_bytes((tmp_path / "SHA256SUMS").read_bytes().replace(b"\n", b"\r\n"))
    assert parse_sums(crlf) == sums
