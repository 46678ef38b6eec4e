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


def redact_answer(text: str | None, secrets: Sequence[str | None]) -> str | None:
    """:func:`redact` for an answer that may be JSON: besides the raw text, every string of the decoded JSON is
    checked, so a key written with JSON escapes (``\\u0073\\u006b...``) that decoding would restore is caught too;
    such an answer is re-encoded from its redacted decoding (no escape left to restore the key)."""
    import json

    text = redact(text, secrets)
    if text is None or not any(secrets):
        return text
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[4:] if body.lower().startswith("json") else body
    try:
        decoded = json.loads(body)
    except ValueError:
        return text
    cleaned = _redact_strings(decoded, secrets)
    return text if cleaned == decoded else json.dumps(cleaned, ensure_ascii=False)


def _redact_strings(value: object, secrets: Sequence[str | None]) -> object:
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [_redact_strings(v, secrets) for v in value]
    if isinstance(value, dict):
        return {redact(k, secrets): _redact_strings(v, secrets) for k, v in value.items()}
    return value


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
