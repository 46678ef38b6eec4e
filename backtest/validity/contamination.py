"""The contamination probe: question terms found in the future corpus but never in the past corpus.

A generator is meant to read only the past corpus. Model weights trained on later text
can read the future all the same. The probe looks for traces of that: a question that
names something the instance's future corpus knows and its past corpus never mentions.

**When it runs.** Only after a set is frozen, as scoring does: the future corpus is
opened through :func:`backtest.corpus.future.open_future_corpus` (seal and files
checked), never at generation or freeze time. ``backtest score`` runs it on every run
(``contamination.json`` in the run folder, the summary in ``RUN.json`` and the report);
``backtest contamination FROZEN_DIR|RUN_DIR`` runs it on its own; ``compare`` shows it.

**Terms** (:func:`extract_terms`, applied alike to question fields and to each corpus
record's title + abstract, after :func:`backtest.text.latex.detex` strips LaTeX):

* ``object``: a catalogued designation found by :func:`backtest.text.objects.find_objects`
  (``WASP-121 b``, ``NGC 1313``, ``GW250114``, ``SN 2025abc``...), normalised as it does;
* ``name``: a named instrument, mission, survey or facility: an alias of the instrument
  lexicon :data:`backtest.text.lexicon.INSTRUMENTS` as written (``Parker Solar
  Probe``, ``Solar Orbiter``, ``Euclid``, ``JWST``...), or any word with at least two
  capital letters and three characters (an acronym or CamelCase name: ``SPHEREx``,
  ``LSSTCam``, ``DESI-II``, ``MeerKLASS``; a trailing ``'s`` dropped), case-sensitive;
  words that are themselves object designations count as objects only;
* ``ngram``: 1 to 3 consecutive content words, lower-cased and lightly stemmed
  (:func:`backtest.text.terms.stem`). Punctuation, numbers, English stop words
  (scikit-learn's list) and words under three letters (unless written with two capitals)
  break a run; an n-gram must start and end with a word outside
  :data:`backtest.text.terms.GENERIC_TERMS` (so "MMS data", a generator's template word next to a
  name, is not an n-gram, while "hi intensity mapping" is).

**Flagged** (:func:`flag_terms`): a term of a question that occurs in no past record and
in at least ``M`` future records: ``M = 1`` for objects and names (any sighting counts),
and for n-grams ``M = max(3, ceil(ln(20) * N_future / N_past))``: the smallest future
count at which never meeting the n-gram among the ``N_past`` past records would itself be
a 5% event (Poisson) if its frequency had not changed; so chance gaps between two corpora
of ordinary phrasing are not flagged (astro-2025: M = 5; space-2016: M = 3). An n-gram
that contains a flagged name, object or shorter n-gram is folded into it.

**Fields read**: ``question``, ``sub_questions``, ``premise``, ``objects`` and the six
falsifiable-contract fields. **Rate**: the share of questions with at least one flagged
term, with a 95% Clopper–Pearson interval (:func:`backtest.core.stats.proportion`); by
kind too. A set built only from past text scores 0 by construction.

**Reading it.** "Never in the past corpus" means never in *this instance's* past corpus:
with a short past window (astro-2025 starts 2025-04-17) an old object or phrase that the
window happens to miss is flagged as well, so the probe measures knowledge from outside
the past corpus, of which knowledge of the future is a part; each flagged term carries the
future record that first names it, for a reader to judge. Terms in neither corpus are
counted (``n_unseen``) but not flagged.

**Indexes.** Each corpus's term document frequencies are built once and cached under its
seal (``corpora/<id>/index/terms/<key>.tsv.gz``; ``BACKTEST_INDEX_CACHE`` shared between
workspaces as for retrieval indexes), written atomically; ``key`` covers the corpus seal,
the term definition, the lexicons and the LaTeX clean-up (:func:`~backtest.text.latex.detex_fingerprint`),
so any change rebuilds.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from backtest.core.caches import shared_cache
from backtest.core.errors import BacktestError, BadInput, CheckFailed
from backtest.core.fileio import atomic_writer
from backtest.core.records import Instance, Question, write_output
from backtest.core.runs import ContaminationSummary
from backtest.core.seal import sha256_json
from backtest.core.stats import proportion
from backtest.core.workspace import Workspace
from backtest.corpus.store import CorpusStore
from backtest.text.latex import detex, detex_fingerprint
from backtest.text.lexicon import INSTRUMENTS
from backtest.text.objects import find_objects
from backtest.text.terms import GENERIC_TERMS, stem
from backtest.validity.outputs import ContaminationReport, FlaggedTerm, QuestionProbe
from backtest.validity.runfolder import CONTAMINATION_FILE, RunFolder

DEFINITION_VERSION = "1"
KINDS = ("object", "name", "ngram")
NGRAM_MAX = 3
NGRAM_MIN_FLOOR = 3
NGRAM_SIGNIFICANCE = 0.05
QUESTION_FIELDS = (
    "question",
    "sub_questions",
    "premise",
    "objects",
    "literature_gap",
    "hypothesis",
    "minimal_test",
    "decisive_metric",
    "supporting_result",
    "falsifying_result",
)
MAX_LISTED = 20

#: The extraction rules in one line; hashed into every index key, so a change of rule rebuilds the indexes.
RULES = (
    "detex; objects=find_objects; names=INSTRUMENTS aliases as written + words with >=2 capitals and >=3 chars "
    "(not designations, trailing 's dropped); ngrams=1-3 stemmed lower-case words between breaks (punctuation, quotes, "
    "numbers, stop words, words <3 letters), first and last word not generic"
)
Term = tuple[str, str]  # (kind, term)

# Pieces are cut at whitespace and punctuation; a piece is a word when it matches _WORD whole.
_SPLIT = re.compile(r"[\s,.;:!?()\[\]{}\"\u201c\u201d\u2018/=<>~*&|%$#@\\^]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-+'\u2019][A-Za-z0-9]+)*")
_POSSESSIVE = re.compile(r"['\u2019]s$")
_QUOTES = "'\u2019`"


# --------------------------------------------------------------------------- terms


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


@lru_cache(maxsize=1)
def _lexicon() -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    """The instrument lexicon's aliases (sorted) and one case-sensitive, word-bounded pattern for them."""
    aliases = tuple(sorted({a for names in INSTRUMENTS.values() for a in names if a.strip()}))
    if not aliases:
        return aliases, None
    alternation = "|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True))
    return aliases, re.compile(r"(?<![A-Za-z0-9])(?:" + alternation + r")(?![A-Za-z0-9])")


def definition(n_past: int | None = None, n_future: int | None = None) -> dict[str, Any]:
    """The term definition and thresholds, as recorded in every output (and hashed into index keys)."""
    out: dict[str, Any] = {
        "version": DEFINITION_VERSION,
        "kinds": list(KINDS),
        "fields": list(QUESTION_FIELDS),
        "ngram_max": NGRAM_MAX,
        "min_future_docs": {"object": 1, "name": 1, "ngram": None},
        "ngram_rule": "M = max(3, ceil(ln(1/0.05) * N_future / N_past)); past count must be 0 for every kind",
        "rules": RULES,
        "text": "detex(title + '. ' + abstract) for records; detex(field) for each question field",
    }
    if n_past is not None and n_future is not None:
        out["min_future_docs"]["ngram"] = ngram_threshold(n_past, n_future)
        out["n_past_docs"], out["n_future_docs"] = n_past, n_future
    return out


def _fingerprint() -> dict[str, Any]:
    """What the extraction depends on besides code: lexicon, stop words, generic terms."""
    return {
        "definition": DEFINITION_VERSION,
        "rules": RULES,
        "lexicon_sha256": sha256_json(list(_lexicon()[0])),
        "stop_sha256": sha256_json(sorted(_stop_words())),
        "generic_sha256": sha256_json(sorted(GENERIC_TERMS)),
        "detex_sha256": detex_fingerprint(),
    }


def ngram_threshold(n_past: int, n_future: int) -> int:
    """``M`` for n-grams: ``max(3, ceil(ln(1/0.05) * n_future / n_past))`` (module docstring)."""
    if n_past <= 0:
        return NGRAM_MIN_FLOOR
    return max(NGRAM_MIN_FLOOR, math.ceil(round(math.log(1 / NGRAM_SIGNIFICANCE) * n_future / n_past, 9)))


def _word_tokens(text: str) -> list[str | None]:
    """The pieces of ``text`` in order: a word as written, or None for a run break."""
    out: list[str | None] = []
    for piece in _SPLIT.split(text):
        word = piece.strip(_QUOTES)
        if word != piece and piece.startswith(tuple(_QUOTES)):
            out.append(None)  # a quotation mark is a boundary, as punctuation is
        out.append(_POSSESSIVE.sub("", word) if word and _WORD.fullmatch(word) else None)
        if word != piece and piece.endswith(tuple(_QUOTES)):
            out.append(None)
    return out


def _is_name_word(word: str) -> bool:
    return len(word) >= 3 and sum(c.isupper() for c in word) >= 2


def _ngram_key(words: Sequence[str]) -> str:
    return " ".join(stem(w.lower()) for w in words)


def extract_terms(text: str) -> set[Term]:
    """The terms of ``text`` (module docstring): ``{(kind, term)}`` with kind object, name or ngram."""
    if not text or not text.strip():
        return set()
    text = detex(text)
    terms: set[Term] = set()
    objects = find_objects(text)
    terms.update(("object", o) for o in objects)
    object_words = {w for o in objects for w in o.split()}
    pattern = _lexicon()[1]
    if pattern is not None:
        terms.update(("name", m.group(0)) for m in pattern.finditer(text))
    stop = _stop_words()
    run: list[str] = []

    def flush() -> None:
        for n in range(1, NGRAM_MAX + 1):
            for i in range(len(run) - n + 1):
                gram = run[i : i + n]
                if gram[0] in GENERIC_TERMS or gram[-1] in GENERIC_TERMS:
                    continue  # an n-gram starts and ends with a specific word
                terms.add(("ngram", " ".join(gram)))
        run.clear()

    for word in _word_tokens(text):
        if word is None:
            flush()
            continue
        name = _is_name_word(word)
        if name and word not in object_words and not find_objects(word):
            terms.add(("name", word))
        low = word.lower()
        if low in stop or (len(low) < 3 and not name):
            flush()
            continue
        run.append(stem(low))
    flush()
    return terms


def question_terms(question: Question | Mapping[str, Any]) -> dict[Term, list[str]]:
    """Every term of a question's text fields, with the fields it occurs in (in :data:`QUESTION_FIELDS` order)."""
    data = question.model_dump() if isinstance(question, BaseModel) else dict(question)
    out: dict[Term, list[str]] = {}
    for name in QUESTION_FIELDS:
        value = data.get(name)
        texts = value if isinstance(value, list) else [value]
        for text in texts:
            if not isinstance(text, str):
                continue
            for term in sorted(extract_terms(text)):
                fields = out.setdefault(term, [])
                if name not in fields:
                    fields.append(name)
    return out


# --------------------------------------------------------------------------- indexes


@dataclass
class TermIndex:
    """One corpus's terms: document frequency per term, and for the future the first record naming it."""

    corpus_id: str
    seal: str
    n_docs: int
    df: dict[Term, int]
    first: dict[Term, tuple[str, str]] = field(default_factory=dict)  # term -> (date, record id)

    def count(self, term: Term) -> int:
        return self.df.get(term, 0)


def record_text(title: str, abstract: str) -> str:
    """The text a record contributes to its corpus's term index."""
    return f"{title}. {abstract}"


def build_term_index(store: CorpusStore, with_first: bool = False) -> TermIndex:
    """Count, for every term, the records of ``store`` whose title + abstract contain it."""
    df: Counter[Term] = Counter()
    first: dict[Term, tuple[str, str]] = {}
    n = 0
    for record in store.iter_records():
        terms = extract_terms(record_text(record.title, record.abstract))
        df.update(terms)
        n += 1
        if with_first:
            stamp = (record.published.isoformat(), record.id)
            for term in terms:
                seen = first.get(term)
                if seen is None or stamp < seen:
                    first[term] = stamp
    return TermIndex(store.corpus_id, store.seal, n, dict(df), first)


def _index_inputs(store: CorpusStore, with_first: bool) -> dict[str, Any]:
    return {
        "format": "1",
        "method": "terms",
        "corpus_id": store.corpus_id,
        "corpus_seal": store.seal,
        "with_first": with_first,
        "terms": _fingerprint(),
    }


def _index_paths(store: CorpusStore, key: str) -> list[Path]:
    paths = [store.ws.corpus_dir(store.corpus_id) / "index" / "terms" / f"{key}.tsv.gz"]
    shared = shared_cache(store.corpus_id, "terms", f"{key}.tsv.gz")
    if shared:
        paths.append(shared)
    return paths


def _write_index(path: Path, index: TermIndex, inputs: dict[str, Any]) -> None:
    header = {"schema_version": "1", "inputs": inputs, "n_docs": index.n_docs, "n_terms": len(index.df)}
    with atomic_writer(path, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz, io.TextIOWrapper(gz, "utf-8", newline="\n") as out:
            out.write(json.dumps(header, sort_keys=True) + "\n")
            for term in sorted(index.df):
                kind, text = term
                extra = "\t".join(index.first[term]) if term in index.first else ""
                out.write(f"{kind}\t{text}\t{index.df[term]}" + (f"\t{extra}" if extra else "") + "\n")


def _read_index(path: Path, inputs: dict[str, Any], store: CorpusStore) -> TermIndex | None:
    """The index at ``path`` when it is intact and was built from exactly ``inputs``; None otherwise."""
    if not path.is_file():
        return None
    df: dict[Term, int] = {}
    first: dict[Term, tuple[str, str]] = {}
    try:
        with gzip.open(path, "rt", encoding="utf-8", newline="\n") as handle:
            header = json.loads(handle.readline())
            if not isinstance(header, dict) or header.get("inputs") != inputs or header.get("schema_version") != "1":
                return None
            for line in handle:
                parts = line.rstrip("\n").split("\t")
                term = (parts[0], parts[1])
                df[term] = int(parts[2])
                if len(parts) == 5:
                    first[term] = (parts[3], parts[4])
    except (OSError, EOFError, ValueError, IndexError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # damaged or truncated: rebuilt, never trusted
    if header.get("n_docs") != len(store) or header.get("n_terms") != len(df):
        return None
    return TermIndex(store.corpus_id, store.seal, int(header["n_docs"]), df, first)


_LOADED: dict[tuple[str, str], TermIndex] = {}


def term_index(store: CorpusStore, with_first: bool = False) -> TermIndex:
    """The term index of ``store``: from memory, the workspace cache, the shared cache, else built and cached."""
    inputs = _index_inputs(store, with_first)
    key = sha256_json(inputs)[:20]
    memo = (str(store.ws.root), key)
    if memo in _LOADED:
        return _LOADED[memo]
    paths = _index_paths(store, key)
    index = None
    for path in paths:
        index = _read_index(path, inputs, store)
        if index is not None:
            break
    if index is None:
        index = build_term_index(store, with_first=with_first)
    for path in paths:
        if _read_index(path, inputs, store) is None:
            with contextlib.suppress(OSError):  # a read-only shared cache is not an error
                _write_index(path, index, inputs)
    _LOADED[memo] = index
    return index


# --------------------------------------------------------------------------- the probe (pure)


def _contains(longer: Sequence[str], shorter: Sequence[str]) -> bool:
    n = len(shorter)
    return 0 < n <= len(longer) and any(tuple(longer[i : i + n]) == tuple(shorter) for i in range(len(longer) - n + 1))


def _fold(flagged: list[FlaggedTerm]) -> list[FlaggedTerm]:
    """Drop each n-gram that overlaps a flagged name or object (either contains the other) or contains a
    shorter flagged n-gram: one finding is listed once."""
    covers = [f.term.split() if f.kind == "ngram" else _ngram_key(f.term.split()).split() for f in flagged]
    kept = []
    for i, f in enumerate(flagged):
        if f.kind == "ngram":
            words = covers[i]
            folded = False
            for j, g in enumerate(flagged):
                if j == i:
                    continue
                if g.kind != "ngram":
                    folded = _contains(words, covers[j]) or _contains(covers[j], words)
                else:
                    folded = len(covers[j]) < len(words) and _contains(words, covers[j])
                if folded:
                    break
            if folded:
                continue
        kept.append(f)
    return kept


def flag_terms(
    terms: Mapping[Term, Sequence[str]],
    past: Mapping[Term, int],
    future: Mapping[Term, int],
    min_ngram_docs: int,
    first: Mapping[Term, tuple[str, str]] | None = None,
) -> tuple[list[FlaggedTerm], int, int]:
    """The flagged terms of one question (pure): ``(flagged, n_outside_past, n_unseen)``.

    ``terms`` maps each question term to the fields it occurs in; ``past`` and ``future`` are
    document frequencies. A term is flagged when its past count is 0 and its future count is
    at least 1 (objects, names) or ``min_ngram_docs`` (n-grams). Sorted by kind, then term."""
    first = first or {}
    flagged, outside, unseen = [], 0, 0
    order = {k: i for i, k in enumerate(KINDS)}
    for term in sorted(terms, key=lambda t: (order.get(t[0], 9), t[1])):
        if past.get(term, 0) > 0:
            continue
        outside += 1
        count = future.get(term, 0)
        if count == 0:
            unseen += 1
            continue
        if count < (min_ngram_docs if term[0] == "ngram" else 1):
            continue
        date, ident = first.get(term, (None, None))
        flagged.append(
            FlaggedTerm(
                term=term[1],
                kind=term[0],
                future_docs=count,
                first_future_id=ident,
                first_future_date=date,
                fields=list(terms[term]),
            )
        )
    return _fold(flagged), outside, unseen


def probe_questions(
    questions: Sequence[Question | Mapping[str, Any]], past: TermIndex, future: TermIndex
) -> list[QuestionProbe]:
    """:func:`flag_terms` for every question, against two term indexes (pure: reads nothing else)."""
    threshold = ngram_threshold(past.n_docs, future.n_docs)
    out = []
    for q in questions:
        qid = q.question_id if isinstance(q, Question) else str(q.get("question_id"))
        terms = question_terms(q)
        flagged, outside, unseen = flag_terms(terms, past.df, future.df, threshold, future.first)
        out.append(
            QuestionProbe(question_id=qid, flagged=flagged, n_terms=len(terms), n_outside_past=outside, n_unseen=unseen)
        )
    return out


# --------------------------------------------------------------------------- the report


NOTE = (
    "flagged: a question term (catalogued object, named instrument/mission/survey, or content n-gram) found in "
    "the future corpus and never in the past corpus; rate = questions with >= 1 flagged term. 'Never in the past "
    "corpus' is relative to this instance's past window: an old term the window misses is flagged too."
)


def build_report(
    probes: Sequence[QuestionProbe],
    instance: Instance,
    past: TermIndex,
    future: TermIndex,
    system: str | None = None,
    frozen_path: str | None = None,
    frozen_seal: str | None = None,
) -> ContaminationReport:
    """The typed record of one probe over a set."""
    n = len(probes)
    by_kind = {kind: proportion(sum(1 for p in probes if any(f.kind == kind for f in p.flagged)), n) for kind in KINDS}
    per_term: dict[Term, list[str]] = {}
    docs: dict[Term, int] = {}
    for p in probes:
        for f in p.flagged:
            per_term.setdefault((f.kind, f.term), []).append(p.question_id)
            docs[(f.kind, f.term)] = f.future_docs
    top = sorted(per_term.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:MAX_LISTED]
    shares = [p.n_outside_past / p.n_terms for p in probes if p.n_terms]
    return ContaminationReport(
        instance_id=instance.instance_id,
        instance_seal=instance.seal,
        cutoff=str(instance.cutoff),
        system=system,
        frozen_path=frozen_path,
        frozen_seal=frozen_seal,
        past={"corpus_id": past.corpus_id, "seal": past.seal, "n_docs": past.n_docs},
        future={"corpus_id": future.corpus_id, "seal": future.seal, "n_docs": future.n_docs},
        definition=definition(past.n_docs, future.n_docs),
        n_questions=n,
        rate=proportion(sum(1 for p in probes if p.flagged), n),
        by_kind=by_kind,
        mean_outside_past_share=round(sum(shares) / len(shares), 6) if shares else None,
        top_terms=[
            {"kind": k, "term": t, "n_questions": len(qids), "future_docs": docs[(k, t)], "questions": qids[:5]}
            for (k, t), qids in top
        ],
        questions=list(probes),
        note=NOTE,
    )


def open_indexes(instance: Instance, ws: Workspace) -> tuple[TermIndex, TermIndex]:
    """The past and future term indexes of ``instance``; the future corpus through its checked path only."""
    from backtest.corpus.future import open_future_corpus
    from backtest.corpus.instance import open_past_corpus

    past_store = open_past_corpus(instance, ws)
    if past_store.seal != instance.past.seal:
        raise CheckFailed(f"past corpus {past_store.corpus_id}: seal differs from instance {instance.instance_id}")
    future_store = open_future_corpus(instance, ws)
    return term_index(past_store), term_index(future_store, with_first=True)


def probe_set(
    questions: Sequence[Question],
    instance: Instance,
    ws: Workspace,
    system: str | None = None,
    frozen_path: str | None = None,
    frozen_seal: str | None = None,
) -> ContaminationReport:
    """Probe frozen ``questions`` of ``instance`` (the caller has checked the set is frozen)."""
    past, future = open_indexes(instance, ws)
    return build_report(
        probe_questions(questions, past, future), instance, past, future, system, frozen_path, frozen_seal
    )


def probe_frozen(frozen_path: str | Path, ws: Workspace) -> ContaminationReport:
    """Probe a frozen set folder; refuses (CheckFailed) one that is not frozen and intact, as scoring does."""
    from backtest.submit.freeze import open_intact_frozen

    path, bundle, instance = open_intact_frozen(frozen_path, ws, "the probe reads the future only after freezing")
    return probe_set(bundle.questions, instance, ws, bundle.frozen.system, ws.relative(path), bundle.frozen.seal)


def frozen_of_run(run_dir: str | Path, ws: Workspace) -> Path:
    """The frozen set folder a run folder (``RUN.json``) names."""
    return RunFolder.open(run_dir).frozen_path(ws)


def probe_path(path: str | Path, ws: Workspace) -> ContaminationReport:
    """Probe a frozen set folder (``FROZEN.json``) or the frozen set of a run folder (``RUN.json``)."""
    folder = Path(path)
    if (folder / "RUN.json").is_file():
        return probe_frozen(frozen_of_run(folder, ws), ws)
    if (folder / "FROZEN.json").is_file() or (ws.root / folder / "FROZEN.json").is_file():
        return probe_frozen(folder, ws)
    raise BadInput(f"{path}: neither a frozen set (FROZEN.json) nor a run folder (RUN.json)")


def summary(report: ContaminationReport, file: str | None = CONTAMINATION_FILE) -> ContaminationSummary:
    """The compact form ``RUN.json`` carries and reports render: rate, by kind, flagged terms per question."""
    return ContaminationSummary(
        rate=report.rate,
        by_kind=report.by_kind,
        min_future_docs=report.definition["min_future_docs"],
        definition_version=report.definition["version"],
        past=report.past["corpus_id"],
        future=report.future["corpus_id"],
        flagged={p.question_id: [f"{f.kind}: {f.term}" for f in p.flagged] for p in report.questions if p.flagged},
        **({"file": file} if file else {}),
    )


def write_report(path: str | Path, report: ContaminationReport) -> Path:
    """Write ``contamination.json`` (checked against its model, atomically)."""
    return write_output(path, ContaminationReport, report.model_dump(mode="json"))


def run_hook(
    run_dir: Path, questions: Sequence[Question], instance: Instance, ws: Workspace, frozen: Any
) -> ContaminationSummary:
    """For ``backtest score``: probe the run's frozen set, write ``contamination.json`` into the run folder and
    return :func:`summary` for ``RUN.json``; a probe that cannot run is recorded (``not_run``), never fatal."""
    try:
        report = probe_set(questions, instance, ws, frozen.system, None, frozen.seal)
    except BacktestError as exc:
        return ContaminationSummary(not_run=exc.message)
    except Exception as exc:  # noqa: BLE001 - a probe failure is recorded in RUN.json and the report, never fatal
        return ContaminationSummary(not_run=f"{exc.__class__.__name__}: {' '.join(str(exc).split())}")
    write_report(Path(run_dir) / CONTAMINATION_FILE, report)
    return summary(report)


def render_text(report: ContaminationReport, limit: int = MAX_LISTED) -> str:
    """The probe as lines of text (``backtest contamination``)."""
    r = report.rate
    lo, hi = r.ci95
    pct = "–" if r.rate is None else f"{100 * r.rate:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"
    lines = [
        f"contamination probe: {report.system or '?'} on {report.instance_id} (cutoff {report.cutoff})",
        f"  {r.k}/{r.n} questions ({pct}) name a term found in the future corpus {report.future['corpus_id']} "
        f"and never in the past corpus {report.past['corpus_id']}",
        "  by kind: "
        + ", ".join(f"{k} {v.k}/{v.n}" for k, v in report.by_kind.items())
        + f"; n-grams need >= {report.definition['min_future_docs']['ngram']} future records",
    ]
    flagged = [p for p in report.questions if p.flagged]
    for p in flagged[:limit]:
        terms = "; ".join(
            f"{f.kind} {f.term!r} ({f.future_docs} future, first {f.first_future_id} {f.first_future_date})"
            for f in p.flagged[:4]
        )
        more = f" … +{len(p.flagged) - 4}" if len(p.flagged) > 4 else ""
        lines.append(f"  {p.question_id}: {terms}{more}")
    if len(flagged) > limit:
        lines.append(f"  … and {len(flagged) - limit} more flagged questions")
    return "\n".join(lines) + "\n"


__all__ = [
    "ContaminationReport",
    "FlaggedTerm",
    "QuestionProbe",
    "TermIndex",
    "build_report",
    "build_term_index",
    "definition",
    "extract_terms",
    "flag_terms",
    "ngram_threshold",
    "open_indexes",
    "probe_frozen",
    "probe_path",
    "probe_questions",
    "probe_set",
    "question_terms",
    "render_text",
    "run_hook",
    "summary",
    "term_index",
    "write_report",
]
