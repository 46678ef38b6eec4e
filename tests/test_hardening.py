"""Hostile input that once got through (issue "Hardening"), each reproduced on real files.

Each test here failed before its fix (the commit that adds it says so).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backtest.core.records import check_safe_name

PROMPT = Path(__file__).resolve().parent.parent / "judges" / "prompts" / "outcome-premise-compact-v2.md"


@pytest.mark.parametrize("name", ["nlsys\n", "ok\n", "a\r", "a\nb", "..x", "/abs", "", "v1\n"])
def test_safe_names_are_matched_whole(name):
    """``$`` matches before a trailing newline: a name with one must still be refused."""
    with pytest.raises(ValueError):
        check_safe_name(name)


def test_system_name_with_trailing_newline_is_refused_at_freeze(astro_ep_ws, copy_ws, cli, tmp_path):
    from backtest.generators import run_generator

    ws = copy_ws(astro_ep_ws)
    made = run_generator("random_claims", "astro-2025-ep", ws, n=3, seed=2, out=tmp_path / "sub")
    meta_path = tmp_path / "sub" / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["system_name"] = "nlsys\n"
    meta_path.write_text(json.dumps(meta))
    code, out, err = cli(["freeze", str(tmp_path / "sub"), "--instance", "astro-2025-ep"], root=ws.root)
    assert code == 2 and "system_name 'nlsys\\n' must match" in err
    assert not any(p.name.endswith("\n") for p in ws.frozen.rglob("*"))
    assert made["n_questions"] == 3


def test_run_id_with_trailing_newline_is_refused(astro_ep_ws, copy_ws, cli, tmp_path):
    from backtest.generators import run_generator
    from backtest.submit.freeze import freeze_once

    ws = copy_ws(astro_ep_ws)
    made = run_generator("random_claims", "astro-2025-ep", ws, n=3, seed=2)
    frozen, _ = freeze_once(made["out"], "astro-2025-ep", ws)
    code, out, err = cli(["score", str(frozen), "--run-id", "nlrun\n"], root=ws.root)
    assert code == 2 and "run id" in err
    assert not any("\n" in p.name for p in ws.results.rglob("*"))


def test_prefixed_versioned_evidence_id_freezes_and_passes_leakage(astro_ep_ws, copy_ws, cli, tmp_path):
    """The freeze gate accepted ``arXiv:<id>v1`` but the leakage check did not normalise it: the run was invalid."""
    from backtest.generators import run_generator

    ws = copy_ws(astro_ep_ws)
    run_generator("random_claims", "astro-2025-ep", ws, n=3, seed=4, out=tmp_path / "sub")
    qfile = tmp_path / "sub" / "questions.jsonl"
    rows = [json.loads(line) for line in qfile.read_text().splitlines()]
    rows[0]["source_evidence_ids"] = [f"arXiv:{rows[0]['source_evidence_ids'][0]}v1"]
    qfile.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cli(["freeze", str(tmp_path / "sub"), "--instance", "astro-2025-ep"], root=ws.root)
    assert code == 0, err
    frozen = next(ws.frozen.glob("astro-2025-ep/*/v1"))
    code, out, err = cli(["score", str(frozen), "--json"], root=ws.root)
    assert code == 0, err
    assert json.loads(out)["valid"] is True


def test_lone_surrogate_is_refused_at_freeze(astro_ep_ws, copy_ws, cli, tmp_path):
    """A question with ``\\udc80`` froze and then made ``score`` crash (exit 3) in the tokenizer."""
    from backtest.generators import run_generator

    ws = copy_ws(astro_ep_ws)
    run_generator("random_claims", "astro-2025-ep", ws, n=3, seed=4, out=tmp_path / "sub")
    qfile = tmp_path / "sub" / "questions.jsonl"
    lines = qfile.read_text().splitlines()
    row = json.loads(lines[1])
    lines[1] = json.dumps(row).replace(json.dumps(row["question"]), json.dumps(row["question"])[:-2] + '\\udc80?"')
    qfile.write_text("\n".join(lines) + "\n")
    code, out, err = cli(["freeze", str(tmp_path / "sub"), "--instance", "astro-2025-ep"], root=ws.root)
    assert code == 2 and "lone surrogate" in err and "questions.jsonl:2" in err
    assert not ws.frozen.exists() or not list(ws.frozen.glob("astro-2025-ep/*/v1"))


def test_run_whose_judgments_all_failed_is_incomplete_and_retried(astro_ep_ws, copy_ws, cli, tmp_path):
    """An unreachable endpoint: every judgment judge_failed. Before, score exited 0 with status complete and a
    rerun said 'already complete' without retrying."""
    import socket

    from backtest.core.fileio import read_json
    from backtest.generators import run_generator
    from backtest.submit.freeze import freeze_once

    ws = copy_ws(astro_ep_ws)
    made = run_generator("random_claims", "astro-2025-ep", ws, n=3, seed=5)
    frozen, _ = freeze_once(made["out"], "astro-2025-ep", ws)
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = tmp_path / "dead.toml"
    config.write_text(
        f'kind = "llm"\nbase_url = "http://127.0.0.1:{port}"\nmodel = "none"\nmax_retries = 0\n'
        f'concurrency = 1\ncache = ".cache/dead.sqlite"\nprompt = "{PROMPT}"\n'
    )
    for _attempt in range(2):
        code, out, err = cli(["score", str(frozen), "--judge", str(config), "--run-id", "dead"], root=ws.root)
        assert code == 1, (out, err)
        assert "3 of 3 judgments failed" in err and "rerun" in err
        run = read_json(ws.results / "astro-2025-ep" / "random_claims" / "dead" / "RUN.json")
        assert run["status"] == "incomplete" and run["n_judge_failed"] == 3
        assert run["judged_last_invocation"] == 3  # the rerun tried every failed question again
        assert not (ws.results / "astro-2025-ep" / "random_claims" / "dead" / "judgments.jsonl").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["corpus", "export", "astro-2025-ep", "--role", "past", "--out", "frozen/LEDGER.jsonl"],
        ["corpus", "export", "astro-2025-ep", "--role", "past", "--out", "manifests/astro-2025-ep-past.json"],
        ["corpus", "export", "astro-2025-ep", "--role", "past", "--out", "corpora/astro-2025-ep-past/records.jsonl"],
        ["corpus", "export", "astro-2025-ep", "--role", "past", "--out", "corpora"],
        ["compare", "results", "--out", "frozen/x.md"],
        ["agree", "a.jsonl", "b.jsonl", "--html", "manifests/x.html"],
    ],
)
def test_outputs_into_owned_folders_are_refused(astro_ep_ws, copy_ws, cli, args):
    """``corpus export --out frozen/LEDGER.jsonl`` exited 0 and destroyed the ledger; now exit 2, nothing touched."""
    ws = copy_ws(astro_ep_ws)
    before = {
        p: p.read_bytes()
        for folder in ("frozen", "manifests", "corpora")
        for p in (ws.root / folder).rglob("*")
        if p.is_file()
    }
    import os

    cwd = os.getcwd()
    os.chdir(ws.root)
    try:
        code, out, err = cli(args, root=ws.root)
    finally:
        os.chdir(cwd)
    assert code == 2 and "only its own commands write" in err
    after = {
        p: p.read_bytes()
        for folder in ("frozen", "manifests", "corpora")
        for p in (ws.root / folder).rglob("*")
        if p.is_file()
    }
    assert after == before


def _one_frozen_set(astro_ep_ws, copy_ws, seed=6):
    from backtest.generators import run_generator
    from backtest.submit.freeze import freeze_once

    ws = copy_ws(astro_ep_ws)
    made = run_generator("random_claims", "astro-2025-ep", ws, n=3, seed=seed)
    frozen, _ = freeze_once(made["out"], "astro-2025-ep", ws)
    return ws, frozen


def _rewrite_last_ledger_line(ws, **changes):
    from backtest.core.seal import canonical_json
    from backtest.submit.ledger import entry_hash

    lines = ws.ledger.read_bytes().splitlines(keepends=True)
    data = json.loads(lines[-1])
    data.update(changes)
    data["hash"] = entry_hash(data)
    ws.ledger.write_bytes(b"".join(lines[:-1]) + (canonical_json(data) + "\n").encode())


@pytest.mark.parametrize(
    "field, value",
    [
        ("frozen_at", "2020-01-01T00:00:00Z"),
        ("kind", "prospective"),
        ("system", "other"),
        ("version", 7),
        ("instance_id", "elsewhere"),
    ],
)
def test_ledger_line_fields_are_checked_against_the_set(astro_ep_ws, copy_ws, cli, field, value):
    """A last line rewritten with its own hash recomputed passed ``verify frozen``
    (and for some fields ``verify SET``)."""
    ws, frozen = _one_frozen_set(astro_ep_ws, copy_ws)
    assert cli(["verify", str(ws.frozen)], root=ws.root)[0] == 0
    _rewrite_last_ledger_line(ws, **{field: value})
    for target in (str(ws.frozen), str(frozen)):
        code, out, err = cli(["verify", target], root=ws.root)
        assert code == 1 and field in err, (target, err)


def test_ledger_head_is_printed_and_checked(astro_ep_ws, copy_ws, cli):
    """A consistently rewritten history verifies by itself; only a head published outside can expose it."""
    import shutil

    ws, first = _one_frozen_set(astro_ep_ws, copy_ws)
    from backtest.generators import run_generator
    from backtest.submit.freeze import freeze_once

    made = run_generator("citation_leaders", "astro-2025-ep", ws, n=3, seed=1)
    second, _ = freeze_once(made["out"], "astro-2025-ep", ws)
    code, out, err = cli(["verify", str(ws.frozen), "--head"], root=ws.root)
    assert code == 0, err
    last = out.strip().splitlines()[-1]
    assert last.startswith("ledger head: seq 1 sha256 ")
    head = last.split()[-1]
    assert len(head) == 64
    assert cli(["verify", str(ws.frozen), "--expect-head", head], root=ws.root)[0] == 0
    # history rewritten: the second freeze is erased (its line and its folder); the chain alone still verifies
    ws.ledger.write_bytes(ws.ledger.read_bytes().splitlines(keepends=True)[0])
    shutil.rmtree(second)
    assert cli(["verify", str(ws.frozen)], root=ws.root)[0] == 0
    code, out, err = cli(["verify", str(ws.frozen), "--expect-head", head], root=ws.root)
    assert code == 1 and "not in the chain" in err
    assert first.is_dir()


@pytest.mark.parametrize("head", ["zzzz", "0" * 63, "g" * 64, ""])
def test_expect_head_that_is_no_sha256_is_bad_input(head, capsys):
    """Issue 39, item 13: ``--expect-head zzzz`` said "history rewritten?" (exit 1), as if the chain were at
    fault; a value that is no sha256 is a usage error (exit 2) said before anything is verified."""
    from tests.conftest import REPO, run_cli

    code, _, err = run_cli(["verify", REPO / "frozen", "--expect-head", head], root=REPO, capsys=capsys)
    assert code == 2 and "not a sha256" in err and len(err.splitlines()) == 1


def test_symlinked_set_and_foreign_workspace_do_not_verify(astro_ep_ws, copy_ws, cli, tmp_path):
    import os
    import shutil

    ws, frozen = _one_frozen_set(astro_ep_ws, copy_ws)
    evil = ws.frozen / "astro-2025-ep" / "evil"
    evil.mkdir()
    os.symlink(frozen, evil / "v1")
    code, out, err = cli(["verify", str(evil / "v1")], root=ws.root)
    assert code == 1 and "symbolic link" in err
    # a copy of the workspace elsewhere, with its own ledger: verified against the workspace given, it fails
    other = tmp_path / "forged"
    shutil.copytree(ws.root, other, symlinks=True)
    forged_set = other / frozen.relative_to(ws.root)
    code, out, err = cli(["verify", str(forged_set)], root=ws.root)
    assert code == 1 and "not inside the workspace" in err
    code, out, err = cli(["verify", str(other / "frozen")], root=ws.root)
    assert code == 2 and "not the ledger of the workspace" in err


def test_predictable_failures_get_one_line_not_internal_error(astro_ep_ws, copy_ws, cli, tmp_path):
    """``--instance ../../etc`` (ValueError), JSON 100k deep (RecursionError) and 100k questions (MemoryError in the
    near-duplicate screen) all ended in exit 3 "internal error"."""
    from backtest.generators import run_generator

    ws = copy_ws(astro_ep_ws)
    code, out, err = cli(["freeze", str(tmp_path), "--instance", "../../etc"], root=ws.root)
    assert code == 2 and "internal error" not in err
    sub = tmp_path / "sub"
    run_generator("random_claims", "astro-2025-ep", ws, n=2, seed=1, out=sub)
    good = (sub / "questions.jsonl").read_text().splitlines()[0]
    (sub / "questions.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    code, out, err = cli(["freeze", str(sub), "--instance", "astro-2025-ep"], root=ws.root)
    assert code == 2 and "nested too deeply" in err and "internal error" not in err
    row = json.loads(good)
    lines = [json.dumps({**row, "question_id": f"q{k:06d}", "rank": k + 1}) for k in range(5001)]
    (sub / "questions.jsonl").write_text("\n".join(lines) + "\n")
    code, out, err = cli(["freeze", str(sub), "--instance", "astro-2025-ep"], root=ws.root)
    assert code == 2 and "more than 5000 questions" in err


def test_disk_full_is_a_clear_error(astro_ep_ws, cli, tmp_path):
    """A real full disk (a 64 KiB tmpfs, mounted by the test; skipped where mounting is not allowed): ENOSPC is one
    line and exit 1, not an internal error, and the output file is not left torn (writes are atomic)."""
    import subprocess

    mount = tmp_path / "full"
    mount.mkdir()
    if (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here (not root, or no mount capability)")
    try:
        code, out, err = cli(
            ["corpus", "export", "astro-2025-ep", "--role", "past", "--out", str(mount / "past.jsonl")],
            root=astro_ep_ws.root,
        )
        assert code == 1, err
        assert "no space left on device" in err and "internal error" not in err
        assert not (mount / "past.jsonl").exists() and not list(mount.iterdir())
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_stale_index_temp_folders_of_dead_builds_are_swept(tmp_path):
    """Killed runs left empty ``.tmp`` folders in ``corpora/*/index/embeddings/`` that nothing ever removed."""
    import os
    import subprocess

    from backtest.retrieve.index_store import sweep_stale

    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".abc.pid{dead.pid}.x1y2.tmp"
    live = tmp_path / f".abc.pid{os.getpid()}.z3w4.tmp"
    stale.mkdir()
    live.mkdir()
    assert sweep_stale(tmp_path) == [stale]
    assert not stale.exists() and live.exists()


def test_near_duplicate_screen_memory_is_bounded():
    """The screen built n x n arrays (9.3 GiB at 100k questions); blocked, 5,000 questions stay far below n^2."""
    import random
    import tracemalloc

    from backtest.text.equivalence import TfidfRule, pairs_above_all

    rng = random.Random(0)
    vocab = [f"w{k}" for k in range(3000)]
    texts = [" ".join(rng.choice(vocab) for _ in range(12)) + "?" for _ in range(5000)]
    texts[4999] = texts[17]  # one exact duplicate pair
    tracemalloc.start()
    pairs = pairs_above_all(texts, [TfidfRule(threshold=0.9)])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [(i, j) for i, j, _ in pairs] == [(17, 4999)]
    assert peak < 5000 * 5000 * 8 / 4  # well under one dense n x n float64 matrix (200 MB)


@pytest.mark.parametrize("value", [1761868800, "2025-10-31T00:00:00", "2025-10-31 00:00", "31/10/2025"])
def test_cutoff_date_must_be_written_as_a_day(value):
    """A Unix integer or a datetime string was accepted silently as a cutoff_date."""
    from pydantic import ValidationError

    from backtest.core.records import Question, SubmissionMetadata

    base = {
        "question_id": "q_1",
        "question": "Is it?",
        "domain": "d",
        "cutoff_date": "2025-10-31",
        "generated_at": "2025-10-31",
        "generation_system": "s",
        "source_evidence_ids": ["a"],
        "rank": 1,
        "frozen": True,
    }
    assert Question.model_validate(base).cutoff_date.isoformat() == "2025-10-31"
    with pytest.raises(ValidationError, match="YYYY-MM-DD"):
        Question.model_validate({**base, "cutoff_date": value})
    meta = {"system_name": "s", "description": "d", "cutoff_date": value, "domain": "d", "n_questions": 1}
    with pytest.raises(ValidationError, match="YYYY-MM-DD"):
        SubmissionMetadata.model_validate(meta)


@pytest.mark.parametrize("qid", ["q|1", "q\n1", "../../q", "q 1", "é1"])
def test_question_ids_are_safe_names(qid):
    """Ids become file names, anchors and table cells: ``|``, newlines and paths were accepted."""
    from pydantic import ValidationError

    from backtest.core.records import Question

    with pytest.raises(ValidationError, match="question id"):
        Question.model_validate(
            {
                "question_id": qid,
                "question": "Is it?",
                "domain": "d",
                "cutoff_date": "2025-10-31",
                "generated_at": "2025-10-31",
                "generation_system": "s",
                "source_evidence_ids": ["a"],
                "rank": 1,
                "frozen": True,
            }
        )


def test_ids_differing_only_in_case_are_duplicates(astro_ep_ws, copy_ws, cli, tmp_path):
    from backtest.generators import run_generator

    ws = copy_ws(astro_ep_ws)
    run_generator("random_claims", "astro-2025-ep", ws, n=3, seed=4, out=tmp_path / "sub")
    qfile = tmp_path / "sub" / "questions.jsonl"
    rows = [json.loads(line) for line in qfile.read_text().splitlines()]
    rows[1]["question_id"] = rows[0]["question_id"].upper()
    qfile.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cli(["freeze", str(tmp_path / "sub"), "--instance", "astro-2025-ep"], root=ws.root)
    assert code == 1 and "differing only in case" in err


def test_report_table_cells_fold_newlines_escape_pipes_and_html():
    from backtest.core.html import markdown_cell

    assert markdown_cell("a | b\nc\r\nd") == "a \\| b c d"
    # a question is the submitter's text: raw HTML in a Markdown report would run when rendered
    assert (
        markdown_cell('<script>x</script> "><svg onload=1>')
        == "&lt;script&gt;x&lt;/script&gt; &quot;&gt;&lt;svg onload=1&gt;"
    )
