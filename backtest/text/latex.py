"""LaTeX in arXiv titles and abstracts, to plain text: one owner for the clean-up and its fingerprint.

Used wherever text from a corpus is read for its words: claim extraction (the generators), the contamination
probe's term index, the lifted-sentence checks. Caches of text cleaned here key on :func:`detex_fingerprint`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from backtest.core.seal import sha256_json

# Greek letters and a few symbols keep their meaning as Unicode: "low-$\alpha$ stars" -> "low-α stars",
# "H$\alpha$" -> "Hα", "$5\sigma$" -> "5σ", "$\sigma_8$" -> "σ8" (not "low- stars", "H", "5", "8").
_GREEK = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε", "zeta": "ζ",
    "eta": "η", "theta": "θ", "vartheta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ",
    "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
}  # fmt: skip
_SYMBOLS = {"AA": "Å", "ell": "ℓ", "infty": "∞", "propto": "∝", "circ": "°", "deg": "°", "prime": "′"}
_NAMED_FUNCTIONS = ("log", "ln", "exp", "sin", "cos", "tan")  # \log M -> "log M", not " M"


def _fraction(match: re.Match[str]) -> str:
    """``\\frac{2}{3}`` or ``\\frac23`` -> "2/3" (not "23")."""
    top, bottom = (match.group(1), match.group(2)) if match.group(1) is not None else (match.group(3), match.group(4))
    return f"{top}/{bottom}"


_LATEX_SUBS: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"\$?_\{?(\d)\}?\$?"), r"\1"),  # H$_2$O, H_{2}O -> H2O
    (re.compile(r"\\(?:pm|mp)"), "±"),
    (re.compile(r"\\(?:simeq|approx|sim)(?![A-Za-z])"), "~"),  # simeq before sim: not "~eq"
    (re.compile(r"\\(" + "|".join(_GREEK) + r")(?![A-Za-z])"), lambda m: _GREEK[m.group(1)]),
    (re.compile(r"\\(" + "|".join(_SYMBOLS) + r")(?![A-Za-z])"), lambda m: _SYMBOLS[m.group(1)]),
    (re.compile(r"\\(" + "|".join(_NAMED_FUNCTIONS) + r")(?![A-Za-z])"), r"\1 "),
    (re.compile(r"\\(?:lesssim|lt|leq|le)(?![A-Za-z])"), "<"),  # "\lesssim40": not "40"
    (re.compile(r"\\(?:gtrsim|gt|geq|ge)(?![A-Za-z])"), ">"),
    (re.compile(r"\\r\{A\}"), "Å"),
    (re.compile(r"\\[dt]?frac\s*\{([^{}]{1,20})\}\s*\{([^{}]{1,20})\}|\\[dt]?frac\s*(\d)(\d)"), _fraction),
    # a power of ten keeps its caret ("E > 10^18 eV", not "1018 eV")
    (
        re.compile(r"(?<![\d.])10\^\{?([-+\u2212]?\d+(?:\.\d+)?)\}?"),
        lambda m: "10^" + m.group(1).replace("\u2212", "-"),
    ),
    (re.compile(r"\\(?:times)"), "x"),
    (re.compile(r"\\odot"), "sun"),
    (re.compile(r"\\(?:rm|mathrm|text|textrm|it|bf|mathbf|emph)\b"), ""),
    (re.compile(r"\\[A-Za-z]+"), ""),
    # powers of ten and of a Greek symbol keep their caret ("10^-3", "~ω^-1"); elsewhere "s$^{-1}$" -> "s-1"
    (re.compile(r"[${}\\]|(?<![α-ωΑ-Ω])(?<![^\d.]10)(?<!^10)\^"), ""),
]
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


def detex_fingerprint() -> str:
    """sha256 of :func:`detex`'s rules and tables: caches of text cleaned by it (the contamination probe's term
    index) key on it, so a change to the clean-up rebuilds them."""
    rules = [[p.pattern, r if isinstance(r, str) else "table"] for p, r in _LATEX_SUBS]
    return sha256_json([rules, _GREEK, _SYMBOLS, list(_NAMED_FUNCTIONS)])


def detex(text: str) -> str:
    """Strip the LaTeX of arXiv abstracts to plain text (``H$_2$O`` -> ``H2O``, ``\\pm`` -> ``±``)."""
    text = text.translate(_SUBSCRIPTS)
    for pattern, repl in _LATEX_SUBS:
        text = pattern.sub(repl, text)
    return " ".join(text.split())
