"""``backtest prospective verify`` on the reference release's own SHA256SUMS, and on tampered copies."""

from __future__ import annotations

import datetime as dt
import hashlib
import shutil
import stat
from pathlib import Path

import pytest

from backtest.core.fileio import read_json
from backtest.core.seal import merkle_root
from backtest.studies.prospective.merkle import sum_entries, sums_root
from backtest.studies.prospective.records import Commitment
from backtest.studies.prospective.verify import verify_folder

from .conftest import SQB

RELEASE = SQB / "submissions" / "prospective_2026"
needs_release = pytest.mark.skipif(
    not (RELEASE / "SHA256SUMS").is_file(), reason=f"reference release not found at {RELEASE}"
)


# this repository's own live prospective instance (prospective/README.md)
LIVE = Path(__file__).resolve().parents[1] / "prospective" / "astro-ph-live-2026"


def writable_copy(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest)
    for path in dest.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dest


@pytest.fixture
def release_copy(tmp_path):
    """A writable copy of the release's prospective_2026 folder (the original is read-only)."""
    return writable_copy(RELEASE, tmp_path / "prospective_2026")


def test_the_committed_live_instance_verifies_and_keeps_its_promises(cli):
    """prospective/astro-ph-live-2026: intact; graded only after it was committed (the window opens the day after,
    the first grade a year later, then yearly to 2030); at least four systems of at least 50 questions; every LLM
    declared with its training cutoff, which precedes the cutoff."""
    code, out, err = cli(["prospective", "verify", LIVE])
    assert code == 0, err
    commitment = Commitment.model_validate(read_json(LIVE / "COMMITMENT.json"))
    committed = dt.date.fromisoformat(commitment.committed_at[:10])
    assert commitment.window.start == committed + dt.timedelta(days=1)
    assert commitment.schedule[0] == committed.replace(year=committed.year + 1)
    assert [d.year for d in commitment.schedule] == list(range(committed.year + 1, 2031))
    assert sum(s.n_questions >= 50 for s in commitment.systems) >= 4
    for system in commitment.systems:
        metadata = read_json(LIVE / system.path / "metadata.json")
        for component in metadata.get("llm_components") or []:
            assert component["training_cutoff"] < commitment.cutoff.isoformat()


@needs_release
def test_release_verifies_ok(cli):
    code, out, err = cli(["prospective", "verify", RELEASE])
    assert code == 0, err
    assert out.startswith("OK ") and "4 files" in out


@needs_release
def test_root_is_reproducible_from_the_sums_file_alone():
    """The documented leaf rule: sha256 of each normalised line, in line order, then the pairwise tree."""
    lines = (RELEASE / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    by_hand = merkle_root([hashlib.sha256(line.encode("utf-8")).hexdigest() for line in lines])
    assert sums_root(sum_entries(RELEASE / "SHA256SUMS")) == by_hand
    assert verify_folder(RELEASE).root == by_hand


@needs_release
@pytest.mark.parametrize("offset", [0, 137, -2])
def test_one_byte_changed_fails_naming_the_file(cli, release_copy, offset):
    target = release_copy / "tension_template" / "questions.jsonl"
    data = bytearray(target.read_bytes())
    data[offset] ^= 0x01
    target.write_bytes(bytes(data))
    code, out, err = cli(["prospective", "verify", release_copy])
    assert code == 1
    assert "changed: tension_template/questions.jsonl" in err
    assert "random_claim" not in err and len(err.strip().splitlines()) == 1


@needs_release
def test_missing_and_extra_files_are_named(cli, release_copy):
    (release_copy / "direct_llm" / "questions.jsonl").unlink()
    (release_copy / "random_claim" / "notes.txt").write_text("added later\n")
    code, _, err = cli(["prospective", "verify", "--json", release_copy])
    assert code == 1
    result = verify_folder(release_copy)
    assert result.missing == ["direct_llm/questions.jsonl"]
    assert result.extra == ["random_claim/notes.txt"]
    assert result.changed == []


@needs_release
def test_rewritten_sums_changes_the_root(release_copy):
    """Re-hashing a changed file into SHA256SUMS makes the folder self-consistent, but the root moves."""
    before = verify_folder(release_copy).root
    target = release_copy / "random_claim" / "questions.jsonl"
    target.write_bytes(target.read_bytes() + b"\n")
    sums = release_copy / "SHA256SUMS"
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    lines = [
        f"{digest}  random_claim/questions.jsonl" if line.endswith("random_claim/questions.jsonl") else line
        for line in sums.read_text().splitlines()
    ]
    sums.write_text("\n".join(lines) + "\n")
    after = verify_folder(release_copy)
    assert after.ok and after.root != before


def test_no_sums_file_is_bad_input(cli, tmp_path):
    code, _, err = cli(["prospective", "verify", tmp_path])
    assert code == 2 and "SHA256SUMS" in err


@pytest.mark.parametrize(
    "source",
    [pytest.param(RELEASE, marks=needs_release, id="reference-release"), pytest.param(LIVE, id="astro-ph-live-2026")],
)
def test_random_byte_flips_anywhere_always_fail(cli, tmp_path, source):
    """Flip one byte at seeded random positions of every file, SHA256SUMS (and our COMMITMENT.json) included:
    always exit 1, and a flipped data file is named."""
    import random

    release_copy = writable_copy(source, tmp_path / source.name)
    rng = random.Random(7)
    files = sorted(p for p in release_copy.rglob("*") if p.is_file())
    for path in files:
        original = path.read_bytes()
        for _ in range(5):
            pos = rng.randrange(len(original))
            data = bytearray(original)
            data[pos] ^= 1 << rng.randrange(8)
            rel = path.relative_to(release_copy).as_posix()
            if rel == "SHA256SUMS" and (bytes(data).lower() == original.lower() or original[pos] == 0x0A):
                # 'a' -> 'A' in a digest is the same digest; a newline turned into another line break
                # (\v, \f) is read as the same lines by backtest.core.sums (str.splitlines)
                continue
            path.write_bytes(bytes(data))
            result = verify_folder(release_copy)
            assert not result.ok, (rel, pos)
            if rel not in ("SHA256SUMS", "COMMITMENT.json"):
                assert result.changed == [rel]
            code, _, err = cli(["prospective", "verify", release_copy])
            assert code == 1 and err.startswith("error:")
        path.write_bytes(original)
    assert verify_folder(release_copy).ok


# --------------------------------------------------------------------------- issue 39, item 9

REPO = LIVE.parents[1]


def _published() -> tuple[str, str]:
    """The root and day prospective/README.md publishes for the live instance (as `make verify-prospective` reads
    them)."""
    import re

    text = (REPO / "prospective" / "README.md").read_text()
    found = re.search(
        r"backtest prospective astro-ph-live-2026: sha256 merkle root ([0-9a-f]{64}) committed (\S+)", text
    )
    return found.group(1), found.group(2)


def _verify(cli, folder):
    root, day = _published()
    args = ["--expect-root", root, "--expect-committed", day, "--ledger", REPO / "frozen/LEDGER.jsonl"]
    return cli(["prospective", "verify", folder, *args])


def test_make_verify_prospective_passes_on_the_committed_instance(cli):
    code, out, err = _verify(cli, LIVE)
    assert code == 0 and out.startswith("OK ") and "commitment astro-ph-live-2026" in out, err


def test_a_deleted_commitment_fails_the_ledger_check(cli, tmp_path):
    """Before: with COMMITMENT.json gone, `verify --expect-root R --ledger L` printed OK and skipped the ledger."""
    copy = writable_copy(LIVE, tmp_path / "live")
    (copy / "COMMITMENT.json").unlink()
    code, out, err = _verify(cli, copy)
    assert code == 1 and "COMMITMENT.json is missing" in err and not out.startswith("OK")
    code, out, _ = cli(["prospective", "verify", copy, "--expect-root", _published()[0]])
    assert code == 0  # without --ledger it is any sealed folder, and its root is the published one


@pytest.mark.parametrize(
    ("committed_at", "why"),
    [
        ("2026-12-05T09:00:00Z", "not before the future window opens"),
        ("2026-11-20T09:00:00Z", "is not the published day 2026-12-03"),
    ],
)
def test_committed_at_is_checked_though_the_root_does_not_cover_it(cli, tmp_path, committed_at, why):
    """committed_at lies outside the Merkle root: moved (and the commitment re-sealed), it verified before."""
    from backtest.core.fileio import write_json
    from backtest.core.seal import with_seal

    copy = writable_copy(LIVE, tmp_path / "live")
    data = read_json(copy / "COMMITMENT.json")
    data["committed_at"] = committed_at
    write_json(copy / "COMMITMENT.json", with_seal({k: v for k, v in data.items() if k != "seal"}))
    code, _, err = _verify(cli, copy)
    assert code == 1 and why in err
