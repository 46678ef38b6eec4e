"""``GRADE.md``: a grading as a page for people."""

from __future__ import annotations

from typing import Any

from backtest.scoring.metrics import format_rate


def render_grade(summary: dict[str, Any]) -> str:
    """``GRADE.md``: the status line (provisional or due), then one row per committed system."""

    title = "PROVISIONAL grade" if summary["provisional"] else "Grade"
    lines = [
        f"# {title} of prospective commitment `{summary['commitment_id']}` as of {summary['as_of']}",
        "",
        f"{summary['status']}.",
        "",
        f"Commitment root `{summary['root']}`; future corpus `{summary['future_corpus']['corpus_id']}` "
        f"({summary['future_corpus']['n_records']} papers, seal `{summary['future_corpus']['seal'][:16]}…`); "
        f"retriever {summary['retrieval']['method']} ({summary['retrieval']['model']}, k={summary['retrieval']['k']}); "
        f"judge {summary['judge']['name']}.",
        "",
        "| system | n | coverage | answered | premise refuted | valid |",
        "|---|---|---|---|---|---|",
    ]
    for row in summary["systems"]:
        valid = {True: "yes", False: "NO (leakage check failed)"}.get(row.get("valid"), "not checked")
        lines.append(
            f"| {row['system']} | {row['n']} | "
            + " | ".join(format_rate(row[k]) for k in ("coverage", "answered", "refuted"))
            + f" | {valid} |"
        )
    if summary["provisional"]:
        lines += [
            "",
            f"PROVISIONAL: only {summary['window_fraction']:.1%} of the future window has passed; "
            "these rates will change and are not the committed grade.",
        ]
    return "\n".join(lines) + "\n"
