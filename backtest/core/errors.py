"""The two kinds of failure the command line distinguishes.

``BadInput`` means the user handed us something unusable (exit 2); ``CheckFailed``
means the input was well formed but a verification, leakage check or gate failed
(exit 1). Both carry a one-line message; the CLI prints it without a traceback.
"""

from collections.abc import Sequence

REDACTED = "[redacted]"


def redact(text: str | None, secrets: Sequence[str | None]) -> str | None:
    """``text`` with every occurrence of each secret value replaced by ``[redacted]``.

    Everything a remote service sends back (error bodies, answers) passes through here
    before it can reach an exception, a cache, a judgment or a log: a server that quotes
    the request's ``Authorization`` header back must not get the key written anywhere."""
    if text is None:
        return None
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


class BacktestError(Exception):
    """Base class of every error the CLI turns into a one-line message."""

    exit_code = 2

    def __init__(self, message: str, details: list[str] | None = None):
        super().__init__(message)
        self.message = " ".join(str(message).split())
        self.details = details or []


class BadInput(BacktestError):
    """Unusable input: a malformed file, a missing path, a wrong option (exit 2)."""

    exit_code = 2


class CheckFailed(BacktestError):
    """A verification, gate or leakage check failed (exit 1); ``details`` lists each failure."""

    exit_code = 1
