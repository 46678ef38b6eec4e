"""``backtest prospective verify`` on the reference release's own SHA256SUMS, and on tampered copies."""

from __future__ import annotations

import hashlib
import shutil
import stat

import pytest

from backtest.core.seal import merkle_root
from backtest.studies.prospective.merkle import sum_entries, sums_root
from backtest.studies.prospective.verify import verify_folder

from .conftest import SQB

RELEASE = SQB / "submissions" / "prospective_2026"
needs_release = pytest.mark.skipif(
    not (RELEASE / "SHA256SUMS").is_file(), reason=f"reference release not found at {RELEASE}"
)


@pytest.fixture
def release_copy(tmp_path):
    """A writable copy of the release's prospective_2026 folder (the original is read-only)."""
    dest = tmp_path / "prospective_2026"
    shutil.copytree(RELEASE, dest)
    for path in dest.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return dest


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


@needs_release
def test_random_byte_flips_anywhere_always_fail(cli, release_copy):
    """Flip one byte at seeded random positions of every file, SHA256SUMS included: always exit 1,
    and a flipped data file is named."""
    import random

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
            if rel != "SHA256SUMS":
                assert result.changed == [rel]
            code, _, err = cli(["prospective", "verify", release_copy])
            assert code == 1 and err.startswith("error:")
        path.write_bytes(original)
    assert verify_folder(release_copy).ok
