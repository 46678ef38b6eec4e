"""Characters that never belong in what a person reads: one owner for the rule and its escape.

NUL, the C0 controls but tab and newline, DEL (the terminal's escape starts ANSI sequences) and the
Unicode bidirectional controls, which reorder text on screen (a right-to-left override can make
"answered" display as something else).
"""

from __future__ import annotations

import re

CONTROL_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with every control character written as its escape (``\\x1b``, ``\\u202e``), safe to print."""
    return CONTROL_CHARS.sub(lambda m: ascii(m.group())[1:-1], text)
