"""The corpus builder's fast paths write the bytes of its reference paths, on real data.

Two fast paths: ``clean_text`` returns a printable text without double spaces with only
its ends stripped, and ``record_bytes`` encodes a record with ``orjson`` when it is
installed. Each is compared with the plain implementation on every code point and on real
rows of ``../shared``, and a corpus of real archive files built with both fast paths is
compared, byte for byte, with one built through the reference paths in one process.
"""

from __future__ import annotations

import csv
import datetime as dt
import lzma
import operator
from pathlib import Path

import pytest

from backtest.core.records import CorpusRecord
from backtest.core.workspace import Workspace
from backtest.corpus import build
from backtest.corpus.build import BuildOptions, build_corpus, record_bytes, record_line
from backtest.corpus.sources import clean_text, get_source

from .conftest import ARCHIVE, DAILY, needs_shared

SPACE_FILES = [ARCHIVE / f"physics.{c}.tsv.xz" for c in ("space-ph", "ao-ph", "geo-ph")]


def reference_clean_text(text: str | None) -> str:
    """``clean_text`` without its fast path."""
    return " ".join(text.split()) if text else ""


def test_the_plain_space_is_the_only_printable_whitespace():
    """The premise of clean_text's fast path, over every code point of this Python's Unicode database."""
    assert [c for c in range(0x110000) if chr(c).isspace() and chr(c).isprintable()] == [0x20]


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        " ",
        "   ",
        " a b ",
        "a  b",
        "a\tb",
        "a\nb ",
        "a\u00a0b",  # no-break space: whitespace, not printable
        "a\u3000b",
        "a\u2028b",
        "a\x85b",
        "a\x1cb",
        "a\x7fb",  # not printable, not whitespace: kept
        "a\u200bb",  # zero-width space: not whitespace, not printable: kept
        "Cafe\u0301  Å",
        "ends with a space ",
    ],
)
def test_clean_text_equals_the_reference(text):
    assert clean_text(text) == reference_clean_text(text)


def _archive_fields(path: Path, names: tuple[str, ...]):
    with lzma.open(path, "rt", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header = next(reader)
        pick = operator.itemgetter(*(header.index(n) for n in names))
        for row in reader:
            yield pick(row)


@needs_shared
def test_clean_text_equals_the_reference_on_real_titles_and_abstracts():
    """Every raw title and abstract of three archive files; most take the fast path, some do not."""
    texts = [t for pair in _archive_fields(ARCHIVE / "physics.hist-ph.tsv.xz", ("title", "abstract")) for t in pair]
    texts += [t for pair in _archive_fields(ARCHIVE / "cs.DL.tsv.xz", ("title", "abstract")) for t in pair]
    assert len(texts) > 6000
    assert [clean_text(t) for t in texts] == [reference_clean_text(t) for t in texts]
    fast = sum(t.isprintable() and "  " not in t for t in texts)
    assert 0.5 * len(texts) < fast < len(texts)


def test_orjson_and_json_write_every_code_point_alike():
    """Each code point (surrogates aside, which both refuse to write as UTF-8), in keys, values and lists."""
    orjson = pytest.importorskip("orjson")
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for i in range(0, len(chars), 512):
        text = "".join(chars[i : i + 512])
        data = {"b": text, text: [text, 1, None, True], "a": {"x": text}}
        assert orjson.dumps(data, option=build._ORJSON_OPTIONS) == build._dumps(data).encode("utf-8"), i


def _odd_rows() -> list[dict]:
    base = {
        "id": "x",
        "title": "t",
        "abstract": "a",
        "published": dt.date(2020, 1, 2),
        "categories": [],
        "authors": [],
        "source": "s",
    }
    return [
        base,
        {**base, "title": "Cafe\u0301 \u212b", "abstract": 'A\u030a\t"q" \\ \u2028\x00\x1f\x7f'},  # not NFC
        {**base, "title": "Café Å", "authors": ["Zoë", "Ørsted"]},  # NFC, not ASCII
        {**base, "doi": None, "references": ["r1"], "citation_count": 3, "citation_count_as_of": dt.date(2021, 5, 6)},
        {**base, "citation_count": 2**70},  # past orjson's 64 bits: json's path
        {**base, "citation_count": -(2**63)},
    ]


@pytest.mark.parametrize("with_orjson", [True, False])
def test_record_bytes_equal_record_line(with_orjson, monkeypatch):
    if not with_orjson:
        monkeypatch.setattr(build, "_orjson", None)
    elif build._orjson is None:
        pytest.skip("orjson is not installed")
    for row in _odd_rows():
        assert record_bytes(row) == record_line(row).encode("utf-8"), row


def test_record_bytes_fails_where_record_line_fails():
    """What orjson refuses goes to json, so a bad row fails the same way with or without orjson."""
    base = _odd_rows()[0]
    for row, error in (
        ({**base, "title": "lone \ud800 surrogate"}, UnicodeEncodeError),
        ({**base, "extra": dt.date(2020, 1, 1)}, TypeError),
        ({**base, "extra": {1.5j}}, TypeError),
    ):
        with pytest.raises(error) as fast:
            record_bytes(row)
        with pytest.raises(error) as reference:
            record_line(row).encode("utf-8")
        assert str(fast.value) == str(reference.value)


@needs_shared
def test_record_bytes_equal_the_model_canonical_line_on_real_rows():
    """Every row of three archive files and 40 daily files, as the builder writes it."""
    archive = get_source("arxiv-archive")
    daily = get_source("arxiv-daily")
    n = 0
    for row in [*archive.rows(SPACE_FILES), *daily.rows(daily.input_files([DAILY])[:40])]:
        assert record_bytes(row) == CorpusRecord.model_validate(row).canonical_line().encode("utf-8"), row["id"]
        n += 1
    assert n > 12000


@needs_shared
def test_fast_and_reference_builds_write_the_same_bytes(tmp_path, monkeypatch):
    """space-2016-past's inputs and filters, built with the fast paths (reader process, orjson, clean_text's
    fast path) and with the reference paths (one process, json, split and join): identical files."""
    cats = ["physics.space-ph", "physics.ao-ph", "physics.geo-ph", "physics.plasm-ph"]

    def build_into(ws: Workspace):
        opts = BuildOptions(
            "arxiv-archive", SPACE_FILES, "space", "past", dt.date(2010, 1, 1), dt.date(2016, 12, 31), cats
        )
        return build_corpus(opts, ws)

    fast = build_into(Workspace(tmp_path / "fast"))
    with monkeypatch.context() as patch:
        patch.setenv("BACKTEST_BUILD_PIPELINE", "0")
        patch.setattr(build, "_orjson", None)
        patch.setattr("backtest.corpus.sources.arxiv_archive.clean_text", reference_clean_text)
        reference = build_into(Workspace(tmp_path / "reference"))
    assert fast.n_records == 4858 and fast.seal == reference.seal
    for name in ("corpora/space/records.jsonl", "corpora/space/index.tsv", "manifests/space.json"):
        assert (tmp_path / "fast" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name


def _prefetched(path: Path) -> tuple[bytes, str | None]:
    """What the builder's xz reader yields from ``path``: the bytes before an error, and the error."""
    from backtest.corpus.sources import _PrefetchedXz

    reader, out, buffer = _PrefetchedXz(path), bytearray(), bytearray(1 << 16)
    try:
        while n := reader.readinto(buffer):
            out += buffer[:n]
    except (lzma.LZMAError, EOFError) as exc:
        return bytes(out), f"{exc.__class__.__name__}: {exc}"
    finally:
        reader.close()
    return bytes(out), None


def _lzma_open(path: Path) -> tuple[bytes, str | None]:
    try:
        with lzma.open(path) as handle:
            return handle.read(), None
    except (lzma.LZMAError, EOFError) as exc:
        return b"", f"{exc.__class__.__name__}: {exc}"


@needs_shared
def test_the_xz_reader_reads_streams_as_lzma_open_does(tmp_path):
    """Large decompression steps, same bytes and errors: a real file, two streams, trailing garbage, a cut,
    a flipped byte, a file that is not xz, an empty file."""
    real = (ARCHIVE / "physics.space-ph.tsv.xz").read_bytes()
    two = lzma.compress(b"first stream\n" * 200_000) + lzma.compress(b"second\n" * 50_000)
    flipped = bytearray(real)
    flipped[len(real) // 2] ^= 0xFF
    cases = {
        "real": real,
        "two": two,
        "garbage": two + b"not a stream",
        "cut": real[: len(real) // 2],
        "flipped": bytes(flipped),
        "not-xz": b"plain text\n",
        "empty": b"",
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.xz"
        path.write_bytes(data)
        got, error = _prefetched(path)
        want, want_error = _lzma_open(path)
        assert error == want_error, name
        if error is None:
            assert got == want and len(got) > 1_000_000, name
        else:  # the bytes before the error are a prefix of the file's data
            assert (lzma.decompress(real)).startswith(got) if name in ("cut", "flipped") else not got, name
