"""The ``offline-cues-v1`` judge: deterministic, no network, no key — the default until ``offline`` v2.

Kept so that runs made with it replay. Measured against careful reading it calls most
topic overlap engagement (kappa about 0.1); the default ``offline`` judge is now the
fitted one (:mod:`backtest.judge.fitted`).

**It is much weaker than an LLM judge.** It cannot read an argument; it matches the
question against the documents shown with a sentence-embedding model and explicit cue
lexicons. Use it to run the pipeline anywhere, to smoke-test submissions and as a
floor; compare systems under an LLM judge. Its validity is measured (the
mismatched-evidence control pairs questions with other questions' documents and
checks that engagement drops), never assumed.

How it decides, per question:

1. **Similarity.** The question (plus its premise, if any) and every document
   (title + abstract) and every abstract sentence are embedded with the dense model
   (``all-MiniLM-L6-v2`` by default). ``doc_sim`` is the question–document cosine,
   ``sent_sim`` the best question–sentence cosine.
2. **Specific terms.** Content words of the question minus stop words and a
   :data:`GENERIC_TERMS` list of words every astronomy abstract uses (planet, model,
   observations, ...), lightly stemmed, plus catalogued object designations found by
   :func:`backtest.text.objects.find_objects`.
3. **Engagement** (the codebook's "same topic is not engagement"): a document engages
   the question when ``doc_sim >= engage_doc_sim`` AND ``sent_sim >= engage_sent_sim``
   AND it shares at least ``min_shared_terms`` specific terms with the question, AND,
   when the question names catalogued objects, the document names one of them. No
   engaging document means ``not_addressed`` with no citations.
4. **Outcome** from the cue lexicons (:data:`LEXICONS`) found in the engaging
   documents' best-matching sentences (the ``cue_sentences`` most similar ones):
   ``answered`` when at least two engaging documents carry a *resolution* cue
   (detections, measurements, upper limits, rule-outs, confirmations) and the best
   ``doc_sim >= answered_doc_sim``; ``posed_but_open`` when engaging documents carry
   *open-question* cues and none a resolution cue; otherwise ``partially_addressed``.
5. **Premise** from *stance* cues in the same sentences: refutation cues (ruled out,
   inconsistent with, no evidence for, ...) outnumbering support → ``refuted`` (two
   or more) or ``weakened`` (one); weakening cues (tension with, cannot explain, ...)
   → ``weakened``; support cues (consistent with, confirm, in agreement with, ...) →
   ``supported``; none → ``still_plausible``. A question with no engaging document
   gets ``still_plausible`` when it states a premise or hypothesis, else
   ``not_applicable``.

Lexicons and thresholds are fixed module data; their sha256 is the judgment's
``prompt_sha256`` (lexicons) and ``config_sha256`` (thresholds + model fingerprint),
so changing either mints a new run.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from backtest.core.records import JudgeInfo, Judgment, Question, RetrievedDocument
from backtest.core.seal import sha256_json
from backtest.core.workspace import Workspace
from backtest.judge.constraints import to_judgment
from backtest.judge.protocol import Judge
from backtest.text.terms import GENERIC_TERMS, specific_terms, split_sentences, stem  # noqa: F401 - GENERIC_TERMS re-exported

PROTOCOL = "offline-cues-v1"

#: Cue lexicons (regular expressions, case-insensitive, matched on word boundaries).
LEXICONS: dict[str, list[str]] = {
    # the later paper reports a result that settles something: detections, measurements,
    # upper limits, rule-outs, confirmations
    "resolution": [
        r"we (?:report|present) (?:the )?(?:first )?(?:detection|discovery|measurement|confirmation)",
        r"\bdetect(?:ed|ion of|s)\b",
        r"\bwe detect\b",
        r"\bdiscover(?:ed|y of)\b",
        r"\bwe measure(?:d)?\b",
        r"\bmeasur(?:e|ed|ement|ements) (?:of|the)\b",
        r"\bwe determine(?:d)?\b",
        r"\bwe (?:find|found|show|demonstrate|confirm|establish|conclude)\b",
        r"\bconfirm(?:s|ed|ing)?\b",
        r"\bupper limits?\b",
        r"\blower limits?\b",
        r"\b(?:rule|ruled|rules|ruling) out\b",
        r"\bexclude[sd]?\b",
        r"\bconstrain(?:s|ed)? (?:the|its|their)\b",
        r"\bat (?:\d+(?:\.\d+)?|high) ?(?:sigma|σ)\b",
        r"\b\d+(?:\.\d+)?\s?(?:sigma|σ)\b",
        r"\bprecis(?:e|ely|ion)\b",
        r"\bresolv(?:e|es|ed)\b",
        r"\bnon-?detection\b",
        r"\bunambiguous(?:ly)?\b",
        r"\brobust(?:ly)? (?:detect|measur|constrain)",
    ],
    # the later paper leaves the question open or asks it itself
    "open_question": [
        r"\bremains? (?:unclear|unknown|uncertain|elusive|debated|open|poorly (?:understood|constrained))\b",
        r"\bopen (?:question|problem|issue)s?\b",
        r"\bpoorly (?:understood|constrained|known)\b",
        r"\bstill (?:debated|unclear|unknown|uncertain|lacking)\b",
        r"\bit is (?:unclear|not clear|unknown)\b",
        r"\byet to be\b",
        r"\bnot yet\b",
        r"\bunresolved\b",
        r"\bunexplained\b",
        r"\bpuzzl(?:e|ing)\b",
        r"\bfuture (?:observations|work|studies|missions)\b",
        r"\bfurther (?:observations|work|study|studies) (?:are|is) (?:needed|required)\b",
        r"\bwhether\b",
        r"\bremains? to be (?:seen|determined|understood)\b",
        r"\bdegenera(?:te|cy|cies)\b",
    ],
    # hedged, partial progress
    "tentative": [
        r"\btentative(?:ly)?\b",
        r"\bmarginal(?:ly)?\b",
        r"\bhints? (?:of|at)\b",
        r"\bsuggest(?:s|ed|ive)?\b",
        r"\bpreliminary\b",
        r"\bpossible\b",
        r"\bmay\b",
        r"\bcould\b",
        r"\bpartial(?:ly)?\b",
        r"\bcannot (?:rule out|exclude)\b",
    ],
    # stance: the later paper supports the question's premise
    "support": [
        r"\bconsistent with\b",
        r"\bin (?:good )?agreement with\b",
        r"\bagrees? with\b",
        r"\bconfirm(?:s|ed|ing)?\b",
        r"\bsupport(?:s|ed|ing)? (?:the|a|our|this)\b",
        r"\bcorroborat(?:e|es|ed|ing)\b",
        r"\bevidence (?:for|of)\b",
        r"\bas predicted\b",
        r"\bin line with\b",
    ],
    # stance: the later paper refutes the premise
    "refute": [
        r"\b(?:rule|ruled|rules|ruling) out\b",
        r"\binconsistent with\b",
        r"\bno evidence (?:for|of)\b",
        r"\bnon-?detection\b",
        r"\bnot detected\b",
        r"\bdo(?:es)? not detect\b",
        r"\bexclude[sd]?\b",
        r"\brefut(?:e|es|ed)\b",
        r"\bcontrary to\b",
        r"\bdisfavou?r(?:s|ed)?\b",
        r"\bincompatible with\b",
        r"\bcontradict(?:s|ed)?\b",
        r"\bfalsif(?:y|ies|ied)\b",
        r"\bno (?:significant|statistically significant) \w+\b",
    ],
    # stance: the later paper weakens the premise without refuting it
    "weaken": [
        r"\bin tension with\b",
        r"\btension\b",
        r"\bat odds with\b",
        r"\bcannot (?:explain|account for|reproduce)\b",
        r"\bfails? to (?:explain|reproduce|account)\b",
        r"\bchalleng(?:e|es|ed|ing)\b",
        r"\bcalls? into question\b",
        r"\b(?:lower|higher|smaller|larger|weaker|stronger) "
        r"than (?:expected|predicted|previously (?:thought|reported))\b",
        r"\bunexpected(?:ly)?\b",
        r"\bin contrast (?:to|with)\b",
        r"\bquestion(?:s|ed)? the\b",
        r"\bsystematic(?:s| errors?| biases?)\b",
    ],
}


@dataclass(frozen=True)
class OfflineSettings:
    """Thresholds of the offline judge (their sha256, with the model, is the config_sha256)."""

    model: str = "all-MiniLM-L6-v2"
    engage_doc_sim: float = 0.45
    engage_sent_sim: float = 0.45
    min_shared_terms: int = 2
    answered_doc_sim: float = 0.60
    answered_min_docs: int = 2
    cue_sentences: int = 2
    max_evidence: int = 5
    refuted_min_cues: int = 2


class _Lexicon:
    def __init__(self, lexicons: dict[str, list[str]]):
        self.patterns = {name: [re.compile(p, re.IGNORECASE) for p in pats] for name, pats in lexicons.items()}

    def find(self, name: str, text: str) -> list[str]:
        """The matched cue phrases of one lexicon in ``text`` (first match of each pattern)."""
        hits = []
        for pat in self.patterns[name]:
            m = pat.search(text)
            if m:
                hits.append(m.group(0).lower())
        return hits


class OfflineJudge(Judge):
    """Deterministic cue-and-similarity judge. Weaker than an LLM; see the module docstring."""

    name = "offline-cues-v1"

    def __init__(self, settings: OfflineSettings | None = None):
        self.cfg = settings or OfflineSettings()
        self.lexicon = _Lexicon(LEXICONS)
        self.prompt_sha256 = sha256_json({"protocol": PROTOCOL, "lexicons": LEXICONS, "generic": sorted(GENERIC_TERMS)})
        self._calls = 0

    @cached_property
    def config_sha256(self) -> str:
        """sha256 of the thresholds and the embedding model's fingerprint."""
        from backtest.text.embed import model_fingerprint

        return sha256_json({"settings": asdict(self.cfg), "model": model_fingerprint(self.cfg.model)})

    def info(self) -> JudgeInfo:
        """Name, model, protocol, lexicon and settings hashes."""
        return JudgeInfo(
            name=self.name,
            model=self.cfg.model,
            protocol=PROTOCOL,
            prompt_sha256=self.prompt_sha256,
            config_sha256=self.config_sha256,
        )

    def settings(self) -> dict[str, Any]:
        """What changes the labels: thresholds, model, lexicon hash."""
        return {
            "kind": "offline-cues-v1",
            "protocol": PROTOCOL,
            **asdict(self.cfg),
            "prompt_sha256": self.prompt_sha256,
            "config_sha256": self.config_sha256,
        }

    def stats(self) -> dict[str, Any]:
        """Questions judged so far (no network, no tokens)."""
        return {"judged": self._calls, "http_calls": 0, "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0}

    # ------------------------------------------------------------------ judging

    def _question_text(self, question: Question) -> str:
        parts = [question.question.strip()]
        if question.premise:
            parts.append(question.premise.strip())
        return " ".join(parts)

    def score_documents(self, question: Question, documents: list[RetrievedDocument]) -> list[dict[str, Any]]:
        """Per document: similarities, shared terms and objects, best sentences and their cues.

        Sentences are embedded only for candidate documents (those that pass the
        document-level similarity, shared-term and object tests); the others cannot
        engage whatever their sentences say.
        """
        from backtest.text.embed import embed_texts
        from backtest.text.objects import find_objects

        cfg = self.cfg
        qtext = self._question_text(question)
        doc_texts = [f"{d.title}. {d.abstract}".strip() for d in documents]
        vectors = embed_texts([qtext] + doc_texts, model=cfg.model)
        qv, dv = vectors[0], vectors[1:]
        doc_sims = dv @ qv if len(documents) else np.zeros(0)
        q_terms = specific_terms(qtext)
        q_objects = set(find_objects(qtext))
        rows: list[dict[str, Any]] = []
        for i, doc in enumerate(documents):
            shared = sorted(q_terms & specific_terms(doc_texts[i]))
            objects = sorted(q_objects & set(find_objects(doc_texts[i])))
            rows.append(
                {
                    "id": doc.id,
                    "doc_sim": round(float(doc_sims[i]), 4),
                    "sent_sim": None,
                    "shared": shared,
                    "objects": objects,
                    "needs_object": bool(q_objects),
                    "cues": {name: [] for name in LEXICONS},
                    "engaged": False,
                }
            )
        candidates = [
            i
            for i, r in enumerate(rows)
            if r["doc_sim"] >= cfg.engage_doc_sim
            and len(r["shared"]) >= cfg.min_shared_terms
            and (r["objects"] or not r["needs_object"])
        ]
        sentences = {i: [documents[i].title.strip()] + split_sentences(documents[i].abstract) for i in candidates}
        flat = [s for i in candidates for s in sentences[i]]
        sv = embed_texts(flat, model=cfg.model) if flat else np.zeros((0, len(qv)), dtype=np.float32)
        offset = 0
        for i in candidates:
            n = len(sentences[i])
            sims = sv[offset : offset + n] @ qv
            offset += n
            order = sorted(range(n), key=lambda j: (-float(sims[j]), j))[: cfg.cue_sentences]
            cue_text = " ".join(sentences[i][j] for j in order)
            row = rows[i]
            row["sent_sim"] = round(float(sims[order[0]]), 4) if order else 0.0
            row["cues"] = {name: self.lexicon.find(name, cue_text) for name in LEXICONS}
            row["engaged"] = row["sent_sim"] >= cfg.engage_sent_sim
        return rows

    def decide(self, question: Question, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Turn scored documents into a raw answer (outcome, premise_status, evidence, rationale)."""
        cfg = self.cfg
        engaged = sorted((r for r in rows if r["engaged"]), key=lambda r: (-r["doc_sim"], r["id"]))
        has_premise = bool(question.premise or getattr(question, "hypothesis", None))
        if not engaged:
            best = max(rows, key=lambda r: r["doc_sim"], default=None)
            why = (
                f"best document {best['id']} has similarity {best['doc_sim']:.2f} and shares "
                f"{len(best['shared'])} specific term(s)"
                if best
                else "no documents were retrieved"
            )
            return {
                "outcome": "not_addressed",
                "premise_status": "still_plausible" if has_premise else "not_applicable",
                "evidence": [],
                "rationale": f"offline judge: no document engages the question ({why}).",
            }
        resolving = [r for r in engaged if r["cues"]["resolution"]]
        opening = [r for r in engaged if r["cues"]["open_question"]]
        if len(resolving) >= cfg.answered_min_docs and engaged[0]["doc_sim"] >= cfg.answered_doc_sim:
            outcome = "answered"
        elif opening and not resolving:
            outcome = "posed_but_open"
        else:
            outcome = "partially_addressed"
        n_support = sum(len(r["cues"]["support"]) for r in engaged)
        n_refute = sum(len(r["cues"]["refute"]) for r in engaged)
        n_weaken = sum(len(r["cues"]["weaken"]) for r in engaged)
        if n_refute > n_support and n_refute >= cfg.refuted_min_cues:
            premise = "refuted"
        elif n_refute > n_support or (n_weaken and n_weaken > n_support):
            premise = "weakened"
        elif n_support:
            premise = "supported"
        else:
            premise = "still_plausible"
        evidence = []
        for r in engaged[: cfg.max_evidence]:
            cues = sorted(
                {c for name in ("resolution", "open_question", "refute", "weaken", "support") for c in r["cues"][name]}
            )
            terms = ", ".join((r["objects"] + [t for t in r["shared"] if t not in r["objects"]])[:6])
            evidence.append(
                {
                    "id": r["id"],
                    "relevance": f"similarity {r['doc_sim']:.2f} (best sentence {r['sent_sim']:.2f}); "
                    f"shared terms: {terms}" + (f"; cues: {', '.join(cues[:5])}" if cues else ""),
                }
            )
        rationale = (
            f"offline judge: {len(engaged)} of {len(rows)} documents engage the question; "
            f"{len(resolving)} carry resolution cues, {len(opening)} open-question cues; "
            f"stance cues support={n_support}, refute={n_refute}, weaken={n_weaken}."
        )
        return {"outcome": outcome, "premise_status": premise, "evidence": evidence, "rationale": rationale}

    def judge(self, question: Question, documents: list[RetrievedDocument]) -> Judgment:
        """Label one question from the documents shown (deterministic)."""
        self._calls += 1
        rows = self.score_documents(question, documents)
        answer = self.decide(question, rows)
        return to_judgment(question.question_id, answer, [d.id for d in documents], self.info(), {})


def make_offline(config: dict[str, Any], config_path: Path | None, ws: Workspace | None) -> OfflineJudge:
    fields = {k: v for k, v in config.items() if k not in ("kind", "name", "description")}
    try:
        judge = OfflineJudge(OfflineSettings(**fields))
    except TypeError as exc:
        from backtest.core.errors import BadInput

        raise BadInput(f"{config_path}: bad offline judge setting ({exc})") from None
    judge.config_path = config_path
    return judge
