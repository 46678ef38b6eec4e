"""The docs site documents every command: the generated reference lists each one with its help, and every
command has a help text of its own (mkdocs --strict itself runs in CI through `make docs`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click

from backtest.cli.main import cli

REPO = Path(__file__).resolve().parents[1]


def gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", REPO / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_command_is_in_the_generated_reference_with_its_help() -> None:
    docs = gen_docs()
    page = docs.cli_page()
    commands = docs.walk(cli, ["backtest"])
    assert len(commands) > 30
    for path, command in commands:
        assert f"## `{' '.join(path)}`" in page, path
        assert (command.help or "").strip(), f"{' '.join(path)} has no help text"
    assert page.count("## `") == len(commands)


def test_every_output_schema_is_in_the_generated_reference() -> None:
    page = gen_docs().schemas_page()
    for name in (
        "question",
        "judgment",
        "run",
        "metrics",
        "comparison",
        "baselines",
        "stress",
        "grade",
        "grade-note",
        "arena",
        "diversity",
        "validation",
        "control",
        "validity-card",
        "decode",
        "index",
        "judge-batch-manifest",
    ):
        assert f"## `{name}`" in page


def test_every_docs_page_is_in_the_nav() -> None:
    nav = (REPO / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").glob("*.md"))
    assert pages and all(page in nav for page in pages), [p for p in pages if p not in nav]
    assert isinstance(cli, click.Group)


def test_the_numbers_the_docs_quote_are_the_committed_benchmark_results() -> None:
    """Every ``<!-- bench:NAME -->`` block of README.md and docs/*.md is what ``make docs`` renders from
    ``bench/results/NAME.json``: a number typed by hand, or a result committed without its docs, fails."""
    docs = gen_docs()
    pages = docs.pages_with_bench_blocks()
    assert pages, "no page quotes a benchmark through a generated block"
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert docs.fill_bench_blocks(text) == text, f"{page.name}: run `make docs` (or scripts/gen_docs.py)"


def test_the_committed_tables_follow_from_the_committed_labels() -> None:
    """Every ``<!-- grounded:INSTANCE -->`` block (results/README.md) is the label-grounded table that
    ``compare --labels`` computes now from the committed runs and readers' labels: a number typed by hand, or a
    label changed without regenerating the table, fails."""
    docs = gen_docs()
    pages = docs.pages_with_grounded_blocks()
    assert any(p.name == "README.md" and p.parent.name == "results" for p in pages)
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert docs.fill_grounded_blocks(text) == text, f"{page}: run `make docs` (or scripts/gen_docs.py)"


def test_every_docs_page_a_committed_file_names_exists() -> None:
    """Issue 39, item 13: results/README.md sent readers to docs/statistics.md, which does not exist. Every
    ``docs/NAME.md`` a committed Markdown file or module names must be a page (the generated reference aside)."""
    import re

    named = re.compile(r"docs/([A-Za-z0-9_/-]+\.md)")
    files = [p for p in REPO.glob("*.md")] + [
        p for d in ("docs", "results", "judges", "prospective") for p in (REPO / d).rglob("*.md")
    ]
    files += list((REPO / "backtest").rglob("*.py"))
    missing = sorted(
        f"{p.relative_to(REPO)}: docs/{m}"
        for p in files
        for m in named.findall(p.read_text(encoding="utf-8"))
        if not m.startswith("reference/") and not (REPO / "docs" / m).is_file()
    )
    assert missing == []
