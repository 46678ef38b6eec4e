"""Validation of arXiv category names given to ``corpus build --categories``.

A category is accepted when its archive is one arXiv has (or had) and its subject
part is well formed; a typo such as ``astro-hp.EP`` is refused instead of silently
matching nothing.
"""

from __future__ import annotations

import re

from backtest.core.errors import BadInput

ARCHIVES = frozenset(
    """astro-ph cond-mat gr-qc hep-ex hep-lat hep-ph hep-th math-ph nlin nucl-ex nucl-th physics
    quant-ph math cs q-bio q-fin stat eess econ acc-phys adap-org alg-geom ao-sci atom-ph bayes-an
    chao-dyn chem-ph cmp-lg comp-gas dg-ga funct-an mtrl-th patt-sol plasm-ph q-alg solv-int supr-con""".split()
)
_FORM = re.compile(r"^([a-z\-]+)(?:\.([A-Za-z\-]{2,12}))?$")


def parse_categories(text: str | None) -> list[str]:
    """Split ``A,B`` into validated category names; raise BadInput on an unknown one."""
    if not text:
        return []
    names = [c.strip() for c in text.split(",") if c.strip()]
    for name in names:
        match = _FORM.match(name)
        if not match or match.group(1) not in ARCHIVES:
            raise BadInput(f"unknown arXiv category {name!r}")
    return names
