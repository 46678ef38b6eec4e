"""Matplotlib figures rendered to PNG bytes the same way everywhere (headless, no timestamp in the file)."""

from __future__ import annotations

import io
from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot on the headless Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_png(fig: Any, dpi: int = 90, tight: bool = False) -> bytes:
    """``fig`` as PNG bytes (no Software metadata, so reruns give identical files); the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None}, **({"bbox_inches": "tight"} if tight else {}))
    pyplot().close(fig)
    return buf.getvalue()
