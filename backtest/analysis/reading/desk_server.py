"""The reading desk's local web server (standard library ``http.server``): one page and a small JSON API.

Bound to 127.0.0.1 unless told another host; every path starts with a random token (``/<token>/``), and a
request without it is refused (403). The server never maps a path to a file: the page, the codebook and the items
are answered from the :class:`~backtest.analysis.reading.desk.Desk`, so no path reaches outside the export (nor
into it: ``decode.json`` and other readers' labels are never served). The page runs under a Content Security
Policy that allows its own script only (a nonce per page), so text that reached the page as markup could still
not run.

API (under ``/<token>/``): ``GET api/state``, ``GET api/item/<k>`` (the k-th item, from 0), ``GET api/guide``,
``POST api/label`` ``{"item_id", "row": {column: value}, "seconds"}``, ``POST api/unlabel`` ``{"item_id"}``,
``POST api/decide`` ``{"item_id", "field", "pick": "a"|"b", "reason", "seconds"}`` (adjudication).
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from backtest.analysis.reading.desk import Desk, item_view
from backtest.core.errors import BadInput, CheckFailed

MAX_BODY = 64 * 1024


def page_html() -> str:
    """The page's template (``desk.html`` beside this module)."""
    return resources.files("backtest.analysis.reading").joinpath("desk.html").read_text(encoding="utf-8")


class DeskServer(ThreadingHTTPServer):
    """A threading HTTP server holding the desk and its token (one lock keeps each request's read-and-write whole
    within this process; the labels folder's file lock does across processes)."""

    daemon_threads = True

    def __init__(self, desk: Desk, host: str, port: int, token: str | None = None) -> None:
        super().__init__((host, port), DeskHandler)
        self.desk = desk
        self.token = token or secrets.token_urlsafe(18)
        self.lock = threading.Lock()
        self.template = page_html()

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), self.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/{self.token}/"


class DeskHandler(BaseHTTPRequestHandler):
    server: DeskServer
    server_version = "backtest-desk"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass  # the terminal shows the URL and errors only

    # ------------------------------------------------------------------ plumbing

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _route(self) -> str | None:
        """The path after the token, or None (403 sent) when the token is missing or wrong."""
        path = self.path.split("?", 1)[0]
        token, _, rest = path.lstrip("/").partition("/")
        if not hmac.compare_digest(token.encode("utf-8", "replace"), self.server.token.encode()):
            self._json(HTTPStatus.FORBIDDEN, {"error": "no such page (the URL's token is wrong)"})
            return None
        if path == f"/{token}":
            self._send(HTTPStatus.MOVED_PERMANENTLY, b"", "text/plain", {"Location": f"/{token}/"})
            return None
        return rest

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise BadInput("request too large")
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            raise BadInput("send JSON (Content-Type: application/json)")
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, RecursionError):
            raise BadInput("bad JSON") from None
        if not isinstance(body, dict):
            raise BadInput("send a JSON object")
        return body

    # ------------------------------------------------------------------ GET

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        rest = self._route()
        if rest is None:
            return
        desk = self.server.desk
        try:
            if rest == "":
                nonce = secrets.token_urlsafe(16)
                csp = (
                    f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
                    "connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
                )
                body = self.server.template.replace("{{NONCE}}", nonce).encode("utf-8")
                self._send(HTTPStatus.OK, body, "text/html; charset=utf-8", {"Content-Security-Policy": csp})
            elif rest == "api/state":
                with self.server.lock:
                    self._json(HTTPStatus.OK, desk.state())
            elif rest == "api/guide":
                self._json(HTTPStatus.OK, {"text": desk.guide()})
            elif rest.startswith("api/item/") and rest[9:].isdigit() and int(rest[9:]) < len(desk.items):
                self._json(HTTPStatus.OK, item_view(desk.items[int(rest[9:])]))
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": "no such page"})
        except (BadInput, CheckFailed) as exc:
            self._json(HTTPStatus.CONFLICT, {"error": str(exc)})

    do_HEAD = do_GET

    # ------------------------------------------------------------------ POST

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        rest = self._route()
        if rest is None:
            return
        desk = self.server.desk
        try:
            body = self._body()
            with self.server.lock:
                if rest == "api/label" and desk.adjudicate is None:
                    label, problems = desk.answer(str(body.get("item_id")), body.get("row") or {}, body.get("seconds"))
                    if label is None:
                        self._json(HTTPStatus.UNPROCESSABLE_ENTITY, {"error": problems[0], "problems": problems})
                        return
                    desk.save(label)
                    self._json(HTTPStatus.OK, {"saved": label.item_id, "state": desk.state()})
                elif rest == "api/unlabel" and desk.adjudicate is None:
                    desk.remove(str(body.get("item_id")))
                    self._json(HTTPStatus.OK, {"removed": body.get("item_id"), "state": desk.state()})
                elif rest == "api/decide" and desk.adjudicate is not None:
                    result = desk.decide(
                        str(body.get("item_id")),
                        str(body.get("field")),
                        str(body.get("pick")),
                        str(body.get("reason") or ""),
                        body.get("seconds"),
                    )
                    self._json(HTTPStatus.OK, result | {"state": desk.state()})
                else:
                    self._json(HTTPStatus.NOT_FOUND, {"error": "no such action"})
        except ValueError as exc:  # a Decision's reason empty once cleaned
            self._json(HTTPStatus.UNPROCESSABLE_ENTITY, {"error": str(exc).splitlines()[0]})
        except (BadInput, CheckFailed) as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})


def serve(desk: Desk, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> DeskServer:
    """A server for ``desk`` listening on ``host``:``port`` (0: a free port); call ``serve_forever`` on it."""
    try:
        return DeskServer(desk, host, port, token)
    except OSError as exc:
        raise BadInput(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
