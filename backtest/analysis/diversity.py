"""Diversity of question sets under the equivalence rules, and the perturbation audit.

**Distinct questions.** For each set and each rule (:mod:`backtest.text.equivalence`:
``tfidf``, ``embedding``; ``llm`` from :mod:`backtest.text.equivalence_llm`), the set's
questions are grouped into clusters of "the same" question and the number of
clusters is the number of distinct questions. Three groupings:

* ``components`` (default): connected components of the same-graph. Transitive, so
  a chain A~B~C is one question even when A and C differ: the most conservative count.
* ``complete``: complete-linkage clustering cut at the rule's threshold: every pair
  inside a cluster is the same. Never fewer clusters than ``components``.
* ``leader``: walk the set in rank order; a question joins the first earlier *leader*
  it is the same as, otherwise it becomes a leader. What a reader going down the
  ranked list sees as new. Between the other two.

**Perturbation audit.** From real questions build controlled variants, each with
a known intent, and report each rule's same-rate per variant type:

* ``wording`` (meaning kept): function-phrase rewrites ("To what extent" → "How far",
  "How does" → "In what way does", ...), else a neutral lead-in ("Put another way, ...");
* ``synonym`` (meaning kept): synonym and alias substitutions from a fixed astronomy
  list (exoplanet → extrasolar planet, JWST → James Webb Space Telescope,
  TRAPPIST-1 → 2MASS J23062928-0502285, robust → reliable, ...);
* ``object_swap`` (meaning changed): the specific object replaced — a catalogued
  designation by another one, a molecule by another, a quoted paper title by
  another question's quoted title, or else a class of object by another
  (white dwarf → neutron star, hot Jupiter → sub-Neptune, galaxy → star cluster, ...);
* ``method_swap`` (meaning changed): the method or instrument replaced
  (transmission spectroscopy → direct imaging, simulations → observations,
  reanalysis → new observations, JWST → ALMA, ...).

A question yields a variant of a type only when a rewrite applies (the counts are
reported). Similarities are computed over the originals and all variants together
(so TF-IDF's vocabulary and weights are the set's, as in real deduplication). A
good rule has a same-rate near 1 for kept-meaning variants and near 0 for changed ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from backtest.core.errors import BadInput
from backtest.core.seal import sha256_text
from backtest.text.equivalence import EquivalenceRule, clusters, pairs_above
from backtest.text.lexicon import SWAP_MOLECULES

GROUPINGS = ("components", "complete", "leader")
KINDS = ("wording", "synonym", "object_swap", "method_swap")
MEANING_KEPT = {"wording": True, "synonym": True, "object_swap": False, "method_swap": False}


# --------------------------------------------------------------------------- distinct counts


def leader_clusters(same: np.ndarray) -> list[list[int]]:
    """Leader clustering over a boolean same-matrix, in index (rank) order."""
    leaders: list[int] = []
    groups: dict[int, list[int]] = {}
    for i in range(same.shape[0]):
        home = next((lead for lead in leaders if same[lead, i]), None)
        if home is None:
            leaders.append(i)
            groups[i] = [i]
        else:
            groups[home].append(i)
    return [groups[lead] for lead in leaders]


def group(
    texts: Sequence[str], rule: EquivalenceRule, grouping: str = "components", sims: np.ndarray | None = None
) -> list[list[int]]:
    """Clusters of ``texts`` under ``rule`` with one of :data:`GROUPINGS`."""
    if grouping not in GROUPINGS:
        raise BadInput(f"unknown grouping {grouping!r}; known: {', '.join(GROUPINGS)}")
    if grouping == "leader":
        matrix = rule.similarity_matrix(texts) if sims is None else sims
        same = np.asarray(matrix) >= rule.threshold
        np.fill_diagonal(same, True)
        return leader_clusters(same)
    if sims is not None:
        return clusters(texts, _Fixed(rule, sims), method=grouping)
    return clusters(texts, rule, method=grouping)


@dataclass
class _Fixed:
    """A rule whose similarity matrix is already computed (so one matrix serves every grouping)."""

    rule: EquivalenceRule
    sims: np.ndarray

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def threshold(self) -> float:
        return self.rule.threshold

    def similarity_matrix(self, texts: Sequence[str]) -> np.ndarray:
        return self.sims


def distinct_report(
    question_sets: Mapping[str, Sequence[str]],
    rules: Sequence[EquivalenceRule],
    groupings: Sequence[str] = GROUPINGS,
    examples: int = 3,
) -> dict[str, Any]:
    """Per set and rule: n, distinct counts per grouping, same-pairs and a few example pairs."""
    out: dict[str, Any] = {
        "rules": {r.name: {"threshold": r.threshold} for r in rules},
        "groupings": list(groupings),
        "sets": {},
    }
    for name in sorted(question_sets):
        texts = list(question_sets[name])
        entry: dict[str, Any] = {"n": len(texts), "rules": {}}
        for rule in rules:
            sims = np.asarray(rule.similarity_matrix(texts), dtype=np.float64) if texts else np.zeros((0, 0))
            pairs = pairs_above(texts, rule, sims=sims) if texts else []
            counts = {g: len(group(texts, rule, g, sims=sims)) if texts else 0 for g in groupings}
            top = sorted(pairs, key=lambda p: -p[2])[:examples]
            entry["rules"][rule.name] = {
                "distinct": counts,
                "distinct_rate": {g: round(c / len(texts), 6) if texts else None for g, c in counts.items()},
                "same_pairs": len(pairs),
                "examples": [
                    {"i": i, "j": j, "similarity": round(s, 4), "a": texts[i], "b": texts[j]} for i, j, s in top
                ],
            }
        out["sets"][name] = entry
    return out


def distinct_markdown(report: dict[str, Any]) -> str:
    """Distinct-question counts as a Markdown table (one row per set, one column per rule × grouping)."""
    rules, groupings = list(report["rules"]), report["groupings"]
    head = "| set | n | " + " | ".join(f"{r} {g}" for r in rules for g in groupings) + " |"
    lines = [head, "|---|---:|" + "---:|" * (len(rules) * len(groupings))]
    for name, entry in report["sets"].items():
        cells = [str(entry["rules"][r]["distinct"][g]) for r in rules for g in groupings]
        lines.append(f"| {name} | {entry['n']} | " + " | ".join(cells) + " |")
    thresholds = ", ".join(f"{r} ≥ {v['threshold']}" for r, v in report["rules"].items())
    return "\n".join(lines) + f"\n\nSame-if thresholds: {thresholds}.\n"


# --------------------------------------------------------------------------- perturbation audit

_WORDING = [
    (r"\bTo what extent\b", "How far"),
    (r"\bto what extent\b", "how far"),
    (r"\bHow does\b", "In what way does"),
    (r"\bHow do\b", "In what way do"),
    (r"\bWhat is the\b", "What would be the"),
    (r"\bWhat are the\b", "What would be the"),
    (r"\bIs the\b", "Would one find that the"),
    (r"\bDoes the\b", "Would the"),
    (r"\bCan\b", "Could"),
    (r"\bunder which\b", "in which"),
    (r"\bwhether\b", "if"),
]
_SYNONYMS = [
    (r"\bexoplanets\b", "extrasolar planets"),
    (r"\bexoplanet\b", "extrasolar planet"),
    (r"\bJWST\b", "the James Webb Space Telescope"),
    (r"\bHST\b", "the Hubble Space Telescope"),
    (r"\bTRAPPIST-1\b", "2MASS J23062928-0502285"),
    (r"\bProxima Centauri\b", "Alpha Centauri C"),
    (r"\bGJ 1214\b", "Gliese 1214"),
    (r"\bK2-18\b", "EPIC 201912552"),
    (r"\bHD 209458\b", "V376 Pegasi"),
    (r"\bhot Jupiters\b", "hot giant planets"),
    (r"\bhot Jupiter\b", "hot giant planet"),
    (r"\bM dwarfs\b", "red dwarfs"),
    (r"\bM dwarf\b", "red dwarf"),
    (r"\btransmission spectra\b", "transit spectra"),
    (r"\btransmission spectrum\b", "transit spectrum"),
    (r"\bH2O\b", "water vapour"),
    (r"\bCO2\b", "carbon dioxide"),
    (r"\bCH4\b", "methane"),
    (r"\brobust\b", "reliable"),
    (r"\bdatasets\b", "data sets"),
    (r"\bmodeling\b", "modelling"),
    (r"\bhighly cited\b", "much-cited"),
    (r"\bmain result\b", "principal finding"),
    (r"\bcentral conclusion\b", "key finding"),
    (r"\bstudy\b", "paper"),
    (r"\bstars\b", "suns"),
    (r"\bgalaxies\b", "galactic systems"),
    (r"\bmeasurements\b", "determinations"),
]
_METHODS = [
    (r"\btransmission spectroscopy\b", "direct imaging"),
    (r"\bemission spectroscopy\b", "phase-curve photometry"),
    (r"\bradial[- ]velocit(?:y|ies)\b", "transit timing variations"),
    (r"\bretrievals?\b", "forward models"),
    (r"\breanalysis\b", "new observations"),
    (r"\bsimulations\b", "observations"),
    (r"\bsimulation\b", "observation"),
    (r"\bobservations\b", "simulations"),
    (r"\bspectroscopy\b", "astrometry"),
    (r"\bphotometry\b", "polarimetry"),
    (r"\bJWST\b", "ALMA"),
    (r"\bHST\b", "Gaia"),
    (r"\bTESS\b", "radio interferometry"),
    (r"\bmodeling assumptions\b", "laboratory calibrations"),
    (r"\bdatasets\b", "numerical experiments"),
    (r"\bmodels?\b", "laboratory experiments"),
    (r"\bmachine learning\b", "Bayesian model comparison"),
]
_OBJECT_CLASSES = [
    (r"\bwhite dwarfs?\b", "neutron star"),
    (r"\bneutron stars?\b", "white dwarf"),
    (r"\bblack holes?\b", "neutron star"),
    (r"\bbrown dwarfs?\b", "red giant"),
    (r"\bprotoplanetary dis[ck]s?\b", "debris disk"),
    (r"\bdebris dis[ck]s?\b", "protoplanetary disk"),
    (r"\bglobular clusters?\b", "galaxy cluster"),
    (r"\bgalaxy clusters?\b", "globular cluster"),
    (r"\bsupernova(?:e|s)?\b", "tidal disruption event"),
    (r"\bquasars?\b", "blazar"),
    (r"\bAGNs?\b", "starburst galaxy"),
    (r"\bmagnetars?\b", "millisecond pulsar"),
    (r"\bpulsars?\b", "magnetar"),
    (r"\bhot Jupiters?\b", "sub-Neptune"),
    (r"\bsub-Neptunes?\b", "hot Jupiter"),
    (r"\bsuper-Earths?\b", "hot Jupiter"),
    (r"\bM dwarfs?\b", "A star"),
    (r"\bthe Sun\b", "Betelgeuse"),
    (r"\bMilky Way\b", "Andromeda galaxy"),
    (r"\bdwarf galax(?:y|ies)\b", "giant elliptical galaxy"),
    (r"\bexoplanets?\b", "binary star"),
    (r"\bgalax(?:y|ies)\b", "star cluster"),
    (r"\bstars?\b", "planet"),
]
_OBJECT_POOL = ["WASP-39 b", "HD 189733 b", "55 Cnc e", "LHS 3844 b", "TOI-270 d", "KELT-9 b", "GJ 436 b", "WASP-107 b"]
_QUOTED = re.compile(r"[\"“]([^\"”]{12,})[\"”]")


@dataclass(frozen=True)
class Variant:
    """A controlled rewrite of question ``source`` (an index into the originals)."""

    source: int
    kind: str
    text: str
    detail: str


def _first_rewrite(text: str, table: list[tuple[str, str]]) -> tuple[str, str] | None:
    for pattern, repl in table:
        match = re.search(pattern, text)
        if match and match.group(0) != repl:
            return text[: match.start()] + repl + text[match.end() :], f"{match.group(0)} → {repl}"
    return None


def _pick(pool: Sequence[str], avoid: set[str], key: str) -> str | None:
    options = [p for p in pool if p not in avoid]
    if not options:
        return None
    return options[int(sha256_text(key)[:8], 16) % len(options)]


def make_variants(texts: Sequence[str]) -> list[Variant]:
    """All applicable controlled variants of each question (deterministic)."""
    from backtest.text.objects import find_objects

    titles = [m.group(1) for t in texts for m in [_QUOTED.search(t)] if m]
    out: list[Variant] = []
    for k, text in enumerate(texts):
        rewrite = _first_rewrite(text, _WORDING)
        if rewrite is None:
            body = text[0].lower() + text[1:] if text[:1].isupper() and not text[1:2].isupper() else text
            rewrite = (f"Put another way, {body}", "lead-in added")
        out.append(Variant(k, "wording", *rewrite))
        syn = _first_rewrite(text, _SYNONYMS)
        if syn:
            out.append(Variant(k, "synonym", *syn))
        swapped = _swap_object(text, k, titles, find_objects(text))
        if swapped:
            out.append(Variant(k, "object_swap", *swapped))
        method = _first_rewrite(text, _METHODS)
        if method:
            out.append(Variant(k, "method_swap", *method))
    return out


def _swap_object(text: str, k: int, titles: list[str], objects: list[str]) -> tuple[str, str] | None:
    for obj in objects:
        for literal in (obj, obj.replace(" ", "")):
            if literal in text:
                new = _pick(_OBJECT_POOL, {obj}, f"{k}:{obj}")
                if new is None:
                    continue
                return text.replace(literal, new, 1), f"{obj} → {new}"
    for mol in SWAP_MOLECULES:
        if re.search(rf"\b{re.escape(mol)}\b", text):
            new = _pick(SWAP_MOLECULES, {mol}, f"{k}:{mol}")
            if new is None:
                continue
            return re.sub(rf"\b{re.escape(mol)}\b", new, text, count=1), f"{mol} → {new}"
    match = _QUOTED.search(text)
    if match:
        new = _pick(titles, {match.group(1)}, f"{k}:title")
        if new:
            return text.replace(match.group(1), new, 1), "quoted paper title swapped"
    return _first_rewrite(text, _OBJECT_CLASSES)


def perturbation_audit(
    texts: Sequence[str], rules: Sequence[EquivalenceRule], max_questions: int | None = None, examples: int = 2
) -> dict[str, Any]:
    """Each rule's same-rate per variant type over controlled variants of ``texts``."""
    originals = list(texts)[:max_questions] if max_questions else list(texts)
    variants = make_variants(originals)
    pool = originals + [v.text for v in variants]
    report: dict[str, Any] = {
        "n_questions": len(originals),
        "n_variants": len(variants),
        "counts": {kind: sum(v.kind == kind for v in variants) for kind in KINDS},
        "meaning_kept": MEANING_KEPT,
        "rules": {},
        "examples": {},
    }
    for kind in KINDS:
        report["examples"][kind] = [
            {"original": originals[v.source], "variant": v.text, "change": v.detail}
            for v in [v for v in variants if v.kind == kind][:examples]
        ]
    for rule in rules:
        sims = np.asarray(rule.similarity_matrix(pool), dtype=np.float64) if pool else np.zeros((0, 0))
        per_kind = {}
        for kind in KINDS:
            idx = [(v.source, len(originals) + m) for m, v in enumerate(variants) if v.kind == kind]
            values = np.array([sims[i, j] for i, j in idx])
            same = int(np.sum(values >= rule.threshold)) if len(values) else 0
            per_kind[kind] = {
                "n": len(idx),
                "same": same,
                "same_rate": round(same / len(idx), 6) if idx else None,
                "mean_similarity": round(float(values.mean()), 6) if len(values) else None,
            }
        kept: list[dict[str, Any]] = [per_kind[k] for k in KINDS if MEANING_KEPT[k]]
        changed: list[dict[str, Any]] = [per_kind[k] for k in KINDS if not MEANING_KEPT[k]]
        n_all = sum(p["n"] for p in kept + changed)
        correct = sum(p["same"] for p in kept) + sum(p["n"] - p["same"] for p in changed)
        report["rules"][rule.name] = {
            "threshold": rule.threshold,
            "per_kind": per_kind,
            "agreement_with_intent": round(correct / n_all, 6) if n_all else None,
        }
    return report


def audit_markdown(report: dict[str, Any]) -> str:
    """The audit as a Markdown table: same-rate (same/n) per rule and variant type."""
    kinds = KINDS
    head = (
        "| rule | "
        + " | ".join(f"{k} ({'kept' if MEANING_KEPT[k] else 'changed'})" for k in kinds)
        + " | agreement with intent |"
    )
    lines = [head, "|---|" + "---:|" * (len(kinds) + 1)]
    for name, r in report["rules"].items():
        cells = []
        for k in kinds:
            p = r["per_kind"][k]
            cells.append("—" if not p["n"] else f"{p['same_rate']:.2f} ({p['same']}/{p['n']})")
        agree = "—" if r["agreement_with_intent"] is None else f"{r['agreement_with_intent']:.2f}"
        lines.append(f"| {name} (≥ {r['threshold']}) | " + " | ".join(cells) + f" | {agree} |")
    note = (
        f"\nSame-rate = share of variants the rule calls the same as their original; {report['n_variants']} variants "
        f"of {report['n_questions']} questions. Ideal: 1 for kept meaning, 0 for changed meaning.\n"
    )
    return "\n".join(lines) + "\n" + note


# --------------------------------------------------------------------------- one study, as the CLI runs it


def ranked_texts(question_sets: Mapping[str, Sequence[Any]]) -> dict[str, list[str]]:
    """Each set's question texts in rank order (ties by question id), from Question records."""
    return {
        name: [q.question for q in sorted(qs, key=lambda q: (q.rank, q.question_id))]
        for name, qs in question_sets.items()
    }


def build_rules(names: Sequence[str], cache_dir=None, llm_config=None) -> list[EquivalenceRule]:
    """The equivalence rules named (duplicates dropped), the embedding one caching under ``cache_dir``."""
    from backtest.text.equivalence import get_rule

    built = []
    for name in dict.fromkeys(names):
        if name == "llm":
            built.append(get_rule("llm", config=llm_config))
        elif name == "embedding" and cache_dir is not None:
            built.append(get_rule("embedding", cache_dir=cache_dir))
        else:
            built.append(get_rule(name))
    return built


def diversity_study(
    question_sets: Mapping[str, Sequence[str]],
    rules: Sequence[EquivalenceRule],
    groupings: Sequence[str] = GROUPINGS,
    audit: bool = True,
    audit_max: int | None = None,
) -> tuple[dict[str, Any], str]:
    """Distinct counts of every set (and the perturbation audit over the sets' questions).

    ``question_sets`` maps a system to its questions in rank order. Returns the JSON-ready
    report and its Markdown (distinct table, then the audit table).
    """
    report: dict[str, Any] = {
        "schema_version": "1",
        "distinct": distinct_report(question_sets, rules, groupings=list(dict.fromkeys(groupings))),
    }
    md = "## Distinct questions per set\n\n" + distinct_markdown(report["distinct"])
    if audit:
        pool = [q for name in sorted(question_sets) for q in list(question_sets[name])[:audit_max]]
        report["audit"] = perturbation_audit(pool, rules)
        md += "\n## Perturbation audit\n\n" + audit_markdown(report["audit"])
    return report, md


def write_diversity(report: dict[str, Any], markdown: str, out_dir) -> None:
    """Write ``diversity.json`` and ``diversity.md`` into ``out_dir`` (atomically)."""
    from pathlib import Path

    from backtest.analysis.outputs import DiversityReport
    from backtest.core.fileio import atomic_write_text
    from backtest.core.records import write_output

    out = Path(out_dir)
    write_output(out / "diversity.json", DiversityReport, report)
    atomic_write_text(out / "diversity.md", "# Diversity\n\n" + markdown)
