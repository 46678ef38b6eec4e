"""Corpus builds, seals and verification on the real corpora in ../shared (and small fixtures).

Covers: reproducible astro-2025 manifests (equal to the committed ones), `corpus verify`
naming a tampered record, `--reproduce`, the arxiv-daily re-listing rule, the arxiv-oai
adapter, `corpus export` of the past side only, space-2016, the arxiv-archive repair of
float-mangled ids, and version suffixes stripped from arXiv ids (the daily listings write
`2604.21892v1` from 2026-04-25 on).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import lzma
import re
import shutil
from pathlib import Path

import pytest

from backtest.core.errors import CheckFailed
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus, load_manifest, verify_corpus
from backtest.corpus.store import CorpusStore, PastCorpus

from .conftest import ARCHIVE, DAILY, REPO, SHARED, needs_shared

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The committed manifests record their inputs relative to the repository root
# (`../shared/corpora/...`); they can only be compared when ../shared is there.
SHARED_BESIDE = SHARED.resolve() == (REPO.parent / "shared").resolve()
needs_default_shared = pytest.mark.skipif(
    not SHARED_BESIDE or not DAILY.is_dir(),
    reason="committed manifests name ../shared/corpora; it is not beside the repo",
)


def _daily_opts(corpus_id: str, role: str, **kw) -> BuildOptions:
    return BuildOptions("arxiv-daily", [Path("../shared/corpora/astro-ph-daily")], corpus_id, role, **kw)


@needs_default_shared
def test_astro_2025_rebuild_is_byte_identical_to_committed_manifests(tmp_path, monkeypatch, astro_ws):
    """Build astro-2025 again (from the repo root, as `make instances` does): same bytes as committed."""
    monkeypatch.chdir(REPO)
    ws = Workspace(tmp_path / "ws")
    build_corpus(_daily_opts("astro-2025-past", "past", end=dt.date(2025, 10, 31)), ws)
    build_corpus(_daily_opts("astro-2025-future", "future", start=dt.date(2025, 11, 1), end=dt.date(2026, 7, 1)), ws)
    for cid in ("astro-2025-past", "astro-2025-future"):
        assert ws.manifest_path(cid).read_bytes() == (REPO / "manifests" / f"{cid}.json").read_bytes(), cid
        # the session build (conftest's build_from_repo) is the same corpus, seal included, so the
        # suite and `make demo` share one cache of embeddings of it
        assert astro_ws.manifest_path(cid).read_bytes() == ws.manifest_path(cid).read_bytes(), cid
        for name in ("records.jsonl", "index.tsv"):
            assert (ws.corpus_dir(cid) / name).read_bytes() == (astro_ws.corpus_dir(cid) / name).read_bytes()


@needs_shared
def test_astro_2025_counts_and_relisting_rule(astro_ws):
    """First listing wins: the two sides are disjoint and every unique id is accounted for."""
    past = load_manifest("astro-2025-past", astro_ws)
    future = load_manifest("astro-2025-future", astro_ws)
    assert past.n_records == 5847  # the corpora README: 5,847 past papers by first listing day
    assert past.counts["n_read"] == future.counts["n_read"] == 16541
    assert past.counts["n_duplicates"] == 2389  # 16,541 lines, 14,152 unique papers (ids without a version)
    # 8,305 future papers by first listing; those whose id month predates the window are dropped and counted
    assert future.n_records + future.counts["n_id_month_dropped"] == 8305 == past.counts["n_outside_window"]
    assert future.n_records == 8223 and future.counts["n_id_month_dropped"] == 82
    # 2,820 listing rows from 2026-04-25 on carry a version; 72 of them re-list a paper first listed without one
    for side in (past, future):
        assert side.counts["n_id_versions_stripped"] == 2820 and side.counts["n_stripped_id_collisions"] == 72
        assert "n_stripped_id_collisions" in side.rules["id_version"]
    assert future.counts["n_id_month_dropped"] > 0 and past.counts["n_relisted_old_ids"] > 0
    p = CorpusStore(past, astro_ws).dates
    f = CorpusStore(future, astro_ws).dates
    assert not set(p) & set(f)
    assert max(p.values()) <= dt.date(2025, 10, 31) < min(f.values())


@needs_shared
def test_verify_passes_then_names_a_flipped_record(astro_ws, copy_ws, cli):
    code, out, err = cli(["corpus", "verify", "astro-2025-past"], root=astro_ws.root)
    assert code == 0, err
    assert out.startswith("OK astro-2025-past: 5847 records")
    ws = copy_ws(astro_ws)
    path = ws.corpus_dir("astro-2025-past") / "records.jsonl"
    lines = path.read_bytes().split(b"\n")
    victim = json.loads(lines[1234])["id"]
    pos = lines[1234].index(b'"abstract":"') + 20
    line = bytearray(lines[1234])
    line[pos] = ord("X") if line[pos] != ord("X") else ord("Y")
    lines[1234] = bytes(line)
    path.write_bytes(b"\n".join(lines))
    code, out, err = cli(["corpus", "verify", str(ws.manifest_path("astro-2025-past"))], root=ws.root)
    assert code == 1
    first = err.splitlines()[0]
    assert first.startswith("error: corpus astro-2025-past does not verify") and f"record {victim}: drifted" in first
    assert verify_corpus(load_manifest("astro-2025-past", ws), ws).drifted == [victim]


@needs_shared
def test_verify_names_missing_and_extra_ids_and_a_bad_seal(astro_ws, copy_ws, cli):
    ws = copy_ws(astro_ws)
    path = ws.corpus_dir("astro-2025-future") / "records.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    gone = json.loads(lines[0])["id"]
    extra = json.loads(lines[1])
    extra["id"] = "9999.99999"
    path.write_bytes(b"".join(lines[1:]) + json.dumps(extra).encode() + b"\n")
    report = verify_corpus(load_manifest("astro-2025-future", ws), ws)
    assert report.missing == [gone] and report.extra == ["9999.99999"] and not report.ok
    manifest = ws.manifest_path("astro-2025-future")
    data = json.loads(manifest.read_text())
    data["n_records"] += 1
    manifest.write_text(json.dumps(data))
    code, _, err = cli(["corpus", "verify", "astro-2025-future"], root=ws.root)
    assert code == 1 and "manifest seal does not match" in err


def _jsonl_records(path: Path, rows: list[tuple[str, str]], title="t") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "id": i,
                "title": f"{title} {i}",
                "abstract": f"abstract of {i}",
                "published": d,
                "source": "test",
                "categories": ["astro-ph.EP"],
            }
        )
        for i, d in rows
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_reproduce_refuses_a_changed_rebuild_and_installs_nothing(tmp_path, cli):
    ws = Workspace(tmp_path / "ws")
    src = _jsonl_records(tmp_path / "in" / "a.jsonl", [("x1", "2020-01-02"), ("x2", "2020-01-03")])
    args = ["corpus", "build", "--source", "jsonl", "--input", src, "--id", "small", "--role", "past"]
    assert cli(args, root=ws.root)[0] == 0
    manifest = ws.manifest_path("small").read_bytes()
    records = (ws.corpus_dir("small") / "records.jsonl").read_bytes()
    assert cli(args + ["--reproduce"], root=ws.root)[0] == 0
    _jsonl_records(src, [("x1", "2020-01-02"), ("x2", "2020-01-04")])
    code, _, err = cli(args + ["--reproduce"], root=ws.root)
    assert code == 1 and len(err.splitlines()) == 1
    assert "does not reproduce the committed manifest" in err and "nothing was installed" in err
    assert ws.manifest_path("small").read_bytes() == manifest
    assert (ws.corpus_dir("small") / "records.jsonl").read_bytes() == records
    assert sorted(p.name for p in ws.corpora.iterdir()) == ["small"]  # no staging folder left
    code, _, err = cli(
        ["corpus", "build", "--source", "jsonl", "--input", src, "--id", "new", "--role", "past", "--reproduce"],
        root=ws.root,
    )
    assert code == 2 and "no committed manifest" in err


def test_arxiv_daily_relisting_rule(tmp_path):
    """A re-listed paper keeps its first listing; an old id listed after the cutoff is counted/dropped."""
    folder = tmp_path / "daily"
    folder.mkdir()
    days = {
        "2025-10-30": [
            {"id": "2510.00001", "title": "First", "summary": "first listing", "categories": ["astro-ph.EP"]}
        ],
        "2025-11-03": [
            {"id": "2510.00001", "title": "First (v2)", "summary": "re-listed", "categories": ["astro-ph.EP"]},
            {"id": "2301.00007", "title": "Old", "summary": "an old paper revised", "categories": ["astro-ph.SR"]},
            {
                "id": "2511.00002",
                "title": "New",
                "summary": "a new paper",
                "categories": ["astro-ph.GA"],
                "authors": ["A. B"],
            },
        ],
    }
    for day, rows in days.items():
        with lzma.open(folder / f"{day}.jsonl.xz", "wt") as handle:
            handle.write("".join(json.dumps(r) + "\n" for r in rows))
    ws = Workspace(tmp_path / "ws")
    everything = build_corpus(BuildOptions("arxiv-daily", [folder], "all", "past"), ws)
    rows = [json.loads(line) for line in (ws.corpus_dir("all") / "records.jsonl").read_text().splitlines()]
    first = next(r for r in rows if r["id"] == "2510.00001")
    assert first["published"] == "2025-10-30" and first["title"] == "First"
    assert everything.counts["n_duplicates"] == 1 and everything.counts["n_relisted_old_ids"] == 1
    future = build_corpus(BuildOptions("arxiv-daily", [folder], "fut", "future", start=dt.date(2025, 10, 31)), ws)
    assert [r.id for r in CorpusStore(future, ws).iter_records()] == ["2511.00002"]
    assert future.counts["n_id_month_dropped"] == 1 and future.counts["n_duplicates"] == 1
    assert "first listing" in future.rules["date"] and "id month" in future.rules["id_month"]


@pytest.mark.parametrize(
    "written, expected",
    [
        # real ids of the astro-ph daily listings (from 2026-04-25 on they carry a version)
        ("2604.21892v1", "2604.21892"),
        ("2602.01548v2", "2602.01548"),
        ("2508.19770v3", "2508.19770"),
        ("astro-ph/9605168v1", "astro-ph/9605168"),
        ("astro-ph/9903433v3", "astro-ph/9903433"),
        # more digits, other old-style archives, 4-digit new-style numbers, a kept arXiv: prefix
        ("2512.07042v10", "2512.07042"),
        ("astro-ph/0601001v2", "astro-ph/0601001"),
        ("math.GT/0309136v1", "math.GT/0309136"),
        ("0704.0001v3", "0704.0001"),
        ("arXiv:2604.21892v2", "arXiv:2604.21892"),
        # no version, or not an arXiv id with one: unchanged
        ("2604.21892", "2604.21892"),
        ("astro-ph/9605168", "astro-ph/9605168"),
        ("1234567", "1234567"),
        ("12345v2", "12345v2"),
        ("2604.21892v0", "2604.21892v0"),
        ("2604.21892v", "2604.21892v"),
        ("2604.21892v1v2", "2604.21892v1v2"),
        ("2604.21892V1", "2604.21892V1"),
        ("W2741809807v2", "W2741809807v2"),
        ("2025ApJ...990L...1v", "2025ApJ...990L...1v"),
        ("v1", "v1"),
    ],
)
def test_strip_arxiv_version(written, expected):
    from backtest.corpus.sources import strip_arxiv_version

    assert strip_arxiv_version(written) == expected


def test_arxiv_daily_versioned_ids_are_stripped_and_deduplicated(tmp_path, monkeypatch):
    """Real listing rows (tests/fixtures/astro-ph-daily-versions): papers first listed without a version and
    re-listed with one from 2026-04-25 on, versions v1..v3, an old-style id listed twice with a version."""
    folder = FIXTURES / "astro-ph-daily-versions"
    ws = Workspace(tmp_path / "ws")
    everything = build_corpus(BuildOptions("arxiv-daily", [folder], "all", "past"), ws)
    records = {r.id: r for r in CorpusStore(everything, ws).iter_records()}
    assert sorted(records) == [
        "2508.19770",
        "2512.07042",
        "2602.01548",
        "2604.17536",
        "2604.21892",
        "2606.15490",
        "astro-ph/9605168",
    ]
    # the first listing wins, with its own title and day, whatever version the later ones carry
    first = {}
    for path in sorted(folder.iterdir()):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            first.setdefault(re.sub(r"v\d+$", "", row["id"]), (path.name[:10], row["title"]))
    assert {i: (r.published.isoformat(), r.title) for i, r in records.items()} == {
        i: (day, " ".join(title.split())) for i, (day, title) in first.items()
    }
    assert records["2604.21892"].published == dt.date(2026, 4, 24) and records["2512.07042"].published == dt.date(
        2025, 12, 9
    )
    c = everything.counts
    assert c["n_read"] == 14 and c["n_id_versions_stripped"] == 10 and c["n_duplicates"] == 7
    # 2604.21892v1 and 2604.17536v2 (twice each), 2602.01548v2, 2512.07042v1 meet a first listing without a
    # version; astro-ph/9605168v1 listed again meets itself, which is an ordinary duplicate
    assert c["n_stripped_id_collisions"] == 6 and c["n_relisted_old_ids"] == 2  # 2508.19770, astro-ph/9605168
    assert "2604.21892v1" in everything.rules["id_version"]
    future = build_corpus(BuildOptions("arxiv-daily", [folder], "fut", "future", start=dt.date(2025, 12, 1)), ws)
    assert [r.id for r in CorpusStore(future, ws).iter_records()] == [
        "2512.07042",
        "2602.01548",
        "2604.17536",
        "2604.21892",
        "2606.15490",
    ]
    assert future.counts["n_id_month_dropped"] == 2
    # the reader process and the in-process path count the same
    monkeypatch.setenv("BACKTEST_BUILD_PIPELINE", "0")
    again = build_corpus(BuildOptions("arxiv-daily", [folder], "all2", "past"), ws)
    assert again.counts == everything.counts and again.records_sha256 == everything.records_sha256


def test_jsonl_versioned_ids_are_stripped(tmp_path):
    from backtest.corpus.sources import get_source

    src = _jsonl_records(
        tmp_path / "in" / "a.jsonl",
        [
            ("2604.21892", "2026-04-24"),
            ("2604.21892v1", "2026-04-25"),
            ("astro-ph/0601001v2", "2006-01-02"),
            ("W123", "2020-01-02"),
        ],
    )
    ws = Workspace(tmp_path / "ws")
    manifest = build_corpus(BuildOptions("jsonl", [src], "j", "past"), ws)
    records = {r.id: r.published for r in CorpusStore(manifest, ws).iter_records()}
    assert records == {
        "2604.21892": dt.date(2026, 4, 24),
        "W123": dt.date(2020, 1, 2),
        "astro-ph/0601001": dt.date(2006, 1, 2),
    }
    assert manifest.counts["n_id_versions_stripped"] == 2 and manifest.counts["n_stripped_id_collisions"] == 1
    assert [r.id for r in get_source("jsonl").records([src])] == [
        "2604.21892",
        "2604.21892",
        "astro-ph/0601001",
        "W123",
    ]


@needs_shared
def test_astro_2025_future_has_no_versioned_ids_and_no_duplicate_papers(astro_ws):
    """The daily listings write versioned ids from 2026-04-25 on; the built corpora hold each paper once, bare."""
    first_versioned = None
    listed_bare_then_versioned = set()
    bare_seen = set()
    for path in sorted(DAILY.glob("*.jsonl.xz")):
        with lzma.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                identifier = json.loads(line)["id"]
                match = re.fullmatch(r"(.+?)v\d+", identifier)
                if match is None:
                    bare_seen.add(identifier)
                    continue
                first_versioned = first_versioned or path.name[:10]
                if match.group(1) in bare_seen:
                    listed_bare_then_versioned.add(match.group(1))
    assert first_versioned == "2026-04-25" and len(listed_bare_then_versioned) == 37
    ids = {}
    for cid in ("astro-2025-past", "astro-2025-future"):
        ids[cid] = [line.split("\t")[0] for line in (astro_ws.corpus_dir(cid) / "index.tsv").read_text().splitlines()]
        assert not [i for i in ids[cid] if re.search(r"v\d+$", i)], cid
        assert len(ids[cid]) == len(set(ids[cid])), cid
    assert len(ids["astro-2025-future"]) == 8223
    assert listed_bare_then_versioned <= set(ids["astro-2025-future"])


def test_arxiv_oai_snapshot_fixture(tmp_path):
    """The OAI snapshot format: versions (RFC 2822), space-separated categories, authors_parsed."""
    ws = Workspace(tmp_path / "ws")
    manifest = build_corpus(
        BuildOptions(
            "arxiv-oai",
            [FIXTURES / "arxiv-oai-snapshot.jsonl"],
            "oai",
            "past",
            start=dt.date(2007, 1, 1),
            end=dt.date(2016, 12, 31),
            categories=["physics.plasm-ph"],
        ),
        ws,
    )
    records = {r.id: r for r in CorpusStore(manifest, ws).iter_records()}
    assert sorted(records) == ["0704.0002", "1501.00001"]
    rec = records["1501.00001"]
    assert rec.published == dt.date(2015, 1, 1)  # v1's day, not v2's or update_date
    assert rec.categories == ["physics.plasm-ph", "physics.space-ph"]
    assert rec.authors == ["Jane Q. Doe", "Wei Zhang"]
    assert rec.abstract == "Magnetic reconnection in the solar wind is observed."
    assert rec.doi == "10.1000/xyz" and rec.source == "arxiv-oai"
    assert records["0704.0002"].published == dt.date(2007, 4, 2)
    c = manifest.counts
    assert c["n_read"] == 6 and c["n_duplicates"] == 1 and c["n_no_abstract"] == 1
    assert c["n_outside_window"] == 1 and c["n_other_categories"] == 1
    assert "n_ids_repaired" not in c and "id_repair" not in manifest.rules  # only arxiv-archive repairs ids
    # no versioned id: no version counts and no rule, so the manifest is what it was before the rule existed
    assert (
        "n_id_versions_stripped" not in c and "n_stripped_id_collisions" not in c and "id_version" not in manifest.rules
    )


@needs_shared
def test_export_writes_the_past_corpus_only(astro_ws, tmp_path, cli):
    out = tmp_path / "past.jsonl"
    code, _, err = cli(["corpus", "export", "astro-2025", "--role", "past", "--out", out], root=astro_ws.root)
    assert code == 0, err
    assert out.read_bytes() == (astro_ws.corpus_dir("astro-2025-past") / "records.jsonl").read_bytes()
    future_ids = set(CorpusStore.open("astro-2025-future", astro_ws).dates)
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert not {r["id"] for r in exported} & future_ids
    assert max(r["published"] for r in exported) <= "2025-10-31"
    code, _, err = cli(["corpus", "export", "astro-2025", "--role", "future"], root=astro_ws.root)
    assert code == 2 and len(err.splitlines()) == 1
    with pytest.raises(CheckFailed):
        PastCorpus(load_manifest("astro-2025-future", astro_ws), astro_ws, dt.date(2025, 10, 31))


@needs_default_shared
@pytest.mark.slow
def test_space_2016_builds_and_matches_committed(tmp_path, monkeypatch):
    """space-2016 from three archive files; plasma papers enter only as cross-lists (no plasm-ph file)."""
    monkeypatch.chdir(REPO)
    assert not (ARCHIVE / "physics.plasm-ph.tsv.xz").exists()
    ws = Workspace(tmp_path / "ws")
    inputs = [Path(f"../shared/corpora/arxiv-archive-2020/physics.{c}.tsv.xz") for c in ("space-ph", "ao-ph", "geo-ph")]
    cats = ["physics.space-ph", "physics.ao-ph", "physics.geo-ph", "physics.plasm-ph"]
    for cid, role, start, end in (
        ("space-2016-past", "past", dt.date(2010, 1, 1), dt.date(2016, 12, 31)),
        ("space-2016-future", "future", dt.date(2017, 1, 1), dt.date(2019, 12, 31)),
    ):
        manifest = build_corpus(
            BuildOptions("arxiv-archive", inputs, cid, role, start=start, end=end, categories=cats), ws
        )
        assert ws.manifest_path(cid).read_bytes() == (REPO / "manifests" / f"{cid}.json").read_bytes()
        records = list(CorpusStore(manifest, ws).iter_records())
        assert all(start <= r.published <= end for r in records)
        assert sum("physics.plasm-ph" in r.categories for r in records) > 20
        assert all(set(cats) & set(r.categories) for r in records)


@pytest.mark.parametrize(
    "written, expected",
    [
        # real arxiv_id values of arxiv-archive-2020 (physics.ao-ph, geo-ph, space-ph, cs.*), written through a float
        ("1501.0398400000001", "1501.03984"),
        ("1502.0195199999998", "1502.01952"),
        ("1503.0316599999999", "1503.03166"),
        ("1701.0735300000001", "1701.07353"),
        ("704.0303", "0704.0303"),
        ("704.319", "0704.3190"),
        ("811.46", "0811.4600"),
        ("710.1", "0710.1000"),
        ("1001.484", "1001.4840"),
        ("1002.21", "1002.2100"),
        ("1109.2", "1109.2000"),
        ("1501.0337", "1501.03370"),
        ("1609.005", "1609.00500"),
        ("1703.07", "1703.07000"),
        # correct as written, or not a bare decimal number: unchanged
        ("1501.00219", "1501.00219"),
        ("1001.0484", "1001.0484"),
        ("0704.0303", "0704.0303"),
        ("1412.9999", "1412.9999"),
        ("1501.99999", "1501.99999"),
        ("1501.00001", "1501.00001"),
        ("ao-sci/9502001", "ao-sci/9502001"),
        ("hep-th/9901001v2", "hep-th/9901001v2"),
        ("2604.21892v1", "2604.21892v1"),
        ("arXiv:1501.0337", "arXiv:1501.0337"),
        ("x", "x"),
        # float noise far below the ids' spacing is rounded away; the digit count follows the yymm
        ("1501.0398400001", "1501.03984"),
        ("1412.9999000000001", "1412.9999"),
        ("1501.1", "1501.10000"),
        # a bare decimal number that reads back as no single id: None (kept as written and counted)
        ("1501.03984001", None),  # 1e-8 off: more than float noise
        ("1501.039845", None),  # half-way between two ids
        ("1412.12345", None),  # five digits before 1501
        ("1501.9999999999999", None),  # rounds to 100000: no 5-digit number
        ("1501.0", None),
        ("1501.0000000000001", None),  # paper number 0
        ("612.1234", None),
        ("0612.1234", None),  # before new-style ids (0704)
        ("1013.1234", None),
        ("1000.1234", None),  # month 13, month 00
    ],
)
def test_repair_float_id(written, expected):
    from backtest.corpus.sources.arxiv_archive import repair_float_id

    assert repair_float_id(written) == expected


def test_archive_float_ids_are_repaired_counted_and_deduplicated(tmp_path):
    """Real rows of arxiv-archive-2020 with float-mangled ids (tests/fixtures/physics.float-ids.tsv), plus
    the same papers with the id written correctly before and after them, and an id no float explains."""
    fixture = FIXTURES / "physics.float-ids.tsv"
    with fixture.open(encoding="utf-8", newline="") as handle:
        header, *rows = csv.reader(handle, delimiter="\t")
    col = header.index("arxiv_id")
    by_id = {row[col]: row for row in rows}

    def write(name: str, ids: list[tuple[str, str]]) -> Path:
        path = tmp_path / "in" / name
        path.parent.mkdir(exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out, delimiter="\t", lineterminator="\n")
            writer.writerow(header)
            for source_id, written in ids:
                writer.writerow([written if i == col else v for i, v in enumerate(by_id[source_id])])
        return path

    # files are read sorted by name: aa (correct id first), the fixture, zz (correct id after a repaired one)
    write("physics.aa-ph.tsv", [("1501.0337", "1501.03370")])
    shutil.copy(fixture, tmp_path / "in" / fixture.name)
    write("physics.zz-ph.tsv", [("1501.0398400000001", "1501.03984"), ("1501.0398400000001", "1412.12345")])
    ws = Workspace(tmp_path / "ws")
    manifest = build_corpus(
        BuildOptions(
            "arxiv-archive", [tmp_path / "in"], "floats", "past", start=dt.date(2007, 1, 1), end=dt.date(2016, 12, 31)
        ),
        ws,
    )
    records = {r.id: r for r in CorpusStore(manifest, ws).iter_records()}
    assert sorted(records) == [
        "0704.0303",
        "0704.3190",
        "1001.0484",
        "1001.4840",
        "1109.2000",
        "1412.12345",
        "1501.00219",
        "1501.03370",
        "1501.03984",
        "1609.00500",
    ]
    assert records["1501.03984"].published == dt.date(2015, 1, 16)  # the fixture's (repaired) row came first
    c = manifest.counts
    assert c["n_read"] == 15 and c["n_ids_repaired"] == 9 and c["n_ids_unrepairable"] == 1
    assert c["n_duplicates"] == 2 and c["n_repaired_id_collisions"] == 2
    assert c["n_outside_window"] == 2  # ao-sci/9502001 (1995), 1703.07000 (2017)
    # 1701.0735300000001 (created 2016-12-25) is 1701.07353: its January 2017 id month leaves a past ending 2016
    assert c["n_id_month_dropped"] == 1
    assert (
        "1501.0398400000001" in manifest.rules["id_repair"]
        and "n_repaired_id_collisions" in manifest.rules["id_repair"]
    )


@needs_shared
def test_space_archive_files_leave_no_float_mangled_id():
    """Every id the adapter yields from the three space files is old-style or a new-style id of the right length."""
    from backtest.corpus.sources import arxiv_id_month, get_source

    source = get_source("arxiv-archive")
    source.counts = counts = {}
    ids = [row["id"] for row in source.rows([ARCHIVE / f"physics.{c}.tsv.xz" for c in ("space-ph", "ao-ph", "geo-ph")])]
    assert len(ids) == 11667 and counts == {"n_ids_repaired": 3596}
    new = [i for i in ids if "/" not in i]
    assert all(len(i) == (9 if i < "1501" else 10) and i[4] == "." for i in new)
    assert all(arxiv_id_month(i) is not None for i in ids)


@needs_shared
def test_fast_record_line_equals_the_model_canonical_line():
    """The builder's fast path writes exactly CorpusRecord.canonical_line(), on real rows of every source."""
    from backtest.core.records import CorpusRecord
    from backtest.corpus.build import record_line
    from backtest.corpus.sources import get_source

    def check(rows):
        n = 0
        for row in rows:
            assert record_line(row) == CorpusRecord.model_validate(row).canonical_line(), row["id"]
            n += 1
        return n

    daily = get_source("arxiv-daily")
    assert check(daily.rows(daily.input_files([DAILY])[:40])) > 900
    archive = get_source("arxiv-archive")
    assert check(archive.rows([ARCHIVE / "physics.hist-ph.tsv.xz", ARCHIVE / "cs.DL.tsv.xz"])) > 3000
    assert check(archive.rows([FIXTURES / "physics.float-ids.tsv"])) == 12
    assert check(get_source("arxiv-oai").rows([FIXTURES / "arxiv-oai-snapshot.jsonl"])) == 6
    odd = {
        "id": "x",
        "title": "Cafe\u0301 \u212b",
        "abstract": 'A\u030a\t"quoted" \\ \u2028',
        "published": dt.date(2020, 1, 2),
        "categories": [],
        "authors": ["Zoe\u0308"],
        "doi": None,
        "references": ["r1"],
        "citation_count": 3,
        "citation_count_as_of": dt.date(2021, 5, 6),
        "source": "s",
    }
    assert record_line(odd) == CorpusRecord.model_validate(odd).canonical_line()
    assert "Café Å" in record_line(odd)


def test_verify_rebuild_compares_with_the_recorded_source(tmp_path, cli):
    """`corpus verify --rebuild` rebuilds from the inputs named in the manifest and names changed ids."""
    ws = Workspace(tmp_path / "ws")
    src = _jsonl_records(
        tmp_path / "in" / "a.jsonl", [("x1", "2020-01-02"), ("x2", "2020-01-03"), ("x3", "2020-01-04")]
    )
    assert (
        cli(["corpus", "build", "--source", "jsonl", "--input", src, "--id", "s", "--role", "past"], root=ws.root)[0]
        == 0
    )
    code, out, err = cli(["corpus", "verify", "s", "--rebuild"], root=ws.root)
    assert code == 0, err
    _jsonl_records(src, [("x1", "2020-01-02"), ("x2", "2020-01-03"), ("x4", "2020-01-04")], title="changed")
    code, out, err = cli(["corpus", "verify", "s", "--rebuild", "--json"], root=ws.root)
    assert code == 1
    report = json.loads(out)
    assert report["drifted"] == ["x1", "x2"] and report["missing"] == ["x3"] and report["extra"] == ["x4"]


def test_verify_rebuild_finds_relative_inputs_from_the_workspace_root(tmp_path, cli, monkeypatch):
    """Inputs recorded relative to where the corpus was built (the workspace root) are found from anywhere."""
    ws = Workspace(tmp_path / "ws")
    _jsonl_records(ws.root / "in" / "a.jsonl", [("x1", "2020-01-02"), ("x2", "2020-01-03")])
    monkeypatch.chdir(ws.root)
    assert cli(["corpus", "build", "--source", "jsonl", "--input", "in/a.jsonl", "--id", "s", "--role", "past"])[0] == 0
    assert load_manifest("s", ws).source["inputs"] == ["in/a.jsonl"]
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, out, err = cli(["corpus", "verify", "s", "--rebuild"], root=ws.root)
    assert code == 0, err
    # an input that is nowhere is named, in one line
    (ws.root / "in" / "a.jsonl").unlink()
    code, out, err = cli(["corpus", "verify", "s", "--rebuild"], root=ws.root)
    assert code == 2 and "in/a.jsonl" in err and len(err.strip().splitlines()) == 1


def test_external_index_sort_matches_a_single_sort(tmp_path, monkeypatch):
    """Index rows are sorted in runs and merged; with tiny runs the bytes equal a one-run build."""
    rows = [(f"id{(i * 7919) % 1000:04d}", f"2020-01-{1 + i % 28:02d}") for i in range(1000)]
    src = _jsonl_records(tmp_path / "in" / "a.jsonl", rows)
    one = build_corpus(BuildOptions("jsonl", [src], "one", "past"), Workspace(tmp_path / "a"))
    monkeypatch.setattr("backtest.corpus.build.INDEX_CHUNK", 7)
    many = build_corpus(BuildOptions("jsonl", [src], "one", "past"), Workspace(tmp_path / "b"))
    index = (tmp_path / "b" / "corpora" / "one" / "index.tsv").read_bytes()
    assert index == (tmp_path / "a" / "corpora" / "one" / "index.tsv").read_bytes()
    assert many.seal == one.seal and many.n_records == 1000
    ids = [line.split(b"\t")[0] for line in index.splitlines()]
    assert ids == sorted(ids) and not list((tmp_path / "b" / "corpora").glob(".*"))
