"""`corpus fetch` for arXiv, ADS and OpenAlex, WITHOUT network access.

There is no network here, so these tests serve small response fixtures
(``tests/fixtures/fetch/``), written to each service's documented format (arXiv API
Atom feed with OpenSearch totals; ADS ``/v1/search/query`` JSON with
``response.numFound/docs``; OpenAlex ``/works`` JSON with ``meta.next_cursor`` and
``abstract_inverted_index``), from a real HTTP server on 127.0.0.1. The fetchers are
pointed at it through ``BACKTEST_<SERVICE>_API_URL``. They test parsing, paging, waits,
retries and the atomic output, not the live services.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from backtest.core.errors import BadInput
from backtest.core.records import CorpusRecord
from backtest.core.workspace import Workspace
from backtest.corpus.build import BuildOptions, build_corpus
from backtest.corpus.fetch import Throttle, abstract_from_inverted_index, fetch_to_jsonl

FIX = Path(__file__).resolve().parent / "fixtures" / "fetch"
D = dt.date


class Server:
    """A local HTTP server answering with ``route(path, params) -> (status, content_type, body)``."""

    def __init__(self):
        self.requests: list[dict] = []
        self.route = lambda path, params: (404, "text/plain", b"no route")
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's naming
                url = urlparse(self.path)
                params = {k: v[0] for k, v in parse_qs(url.query).items()}
                server.requests.append({"path": url.path, "params": params, "headers": dict(self.headers)})
                status, ctype, body = server.route(url.path, params)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                if status == 503:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    srv = Server()
    for name in ("ARXIV", "ADS", "OPENALEX"):
        monkeypatch.setenv(f"BACKTEST_{name}_API_URL", f"{srv.url}/{name.lower()}")
        monkeypatch.setenv(f"BACKTEST_{name}_MIN_INTERVAL", "0")
    monkeypatch.setenv("BACKTEST_FETCH_BACKOFF", "0")
    yield srv
    srv.close()


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_arxiv_atom_paging_and_parsing(server, tmp_path, monkeypatch):
    pages = {"0": "arxiv-page1.xml", "2": "arxiv-page2.xml"}
    server.route = lambda path, p: (200, "application/atom+xml", (FIX / pages[p["start"]]).read_bytes())
    monkeypatch.setattr("backtest.corpus.fetch.ArxivApi.page_size", 2)
    out = tmp_path / "arxiv.jsonl"
    assert fetch_to_jsonl("arxiv", "all:exoplanet", D(2025, 11, 1), D(2025, 11, 30), out) == 3
    rows = _read(out)
    assert [r["id"] for r in rows] == ["2511.01234", "astro-ph/0512001", "2511.05678"]
    first = CorpusRecord.model_validate(rows[0])
    assert first.title == "Hazes in Sub-Neptune Atmospheres"
    assert first.abstract.startswith("We model photochemical hazes in the atmospheres of sub-Neptunes")
    assert first.published == D(2025, 11, 3) and first.authors == ["Ana Lopez", "Kenji Sato"]
    assert first.categories == ["astro-ph.EP", "astro-ph.SR"] and first.doi == "10.3847/xxxx"
    assert first.source == "arxiv-api"
    assert [r["params"]["start"] for r in server.requests] == ["0", "2"]
    query = server.requests[0]["params"]
    assert query["search_query"] == "(all:exoplanet) AND submittedDate:[202511010000 TO 202511302359]"
    assert query["sortBy"] == "submittedDate" and query["max_results"] == "2"
    # every line is a canonical CorpusRecord line, so the jsonl source builds a corpus from it
    manifest = build_corpus(
        BuildOptions("jsonl", [out], "fetched", "future", start=D(2025, 11, 1)), Workspace(tmp_path / "ws")
    )
    assert manifest.n_records == 2 and manifest.counts["n_id_month_dropped"] == 1  # astro-ph/0512001 is an old paper


def test_arxiv_waits_three_seconds_between_calls(server, tmp_path, monkeypatch):
    monkeypatch.delenv("BACKTEST_ARXIV_MIN_INTERVAL")
    pages = {"0": "arxiv-page1.xml", "2": "arxiv-page2.xml"}
    server.route = lambda path, p: (200, "application/atom+xml", (FIX / pages[p["start"]]).read_bytes())
    monkeypatch.setattr("backtest.corpus.fetch.ArxivApi.page_size", 2)
    waits: list[float] = []
    fetch_to_jsonl("arxiv", "all:exoplanet", D(2025, 11, 1), D(2025, 11, 30), tmp_path / "a.jsonl", sleep=waits.append)
    assert len(waits) == 1 and 2.5 < waits[0] <= 3.0  # one wait, before the second call
    clock = iter([0.0, 1.0, 3.0, 12.0, 12.0])
    slept: list[float] = []
    throttle = Throttle(3.0, clock=lambda: next(clock), sleep=slept.append)
    throttle.wait(), throttle.wait(), throttle.wait()
    assert slept == [2.0]  # the third call came 9 s later: no wait


def test_retries_after_503_and_gives_up_cleanly(server, tmp_path):
    calls = {"n": 0}

    def flaky(path, p):
        calls["n"] += 1
        if calls["n"] == 1:
            return 503, "text/plain", b"busy"
        return 200, "application/atom+xml", (FIX / "arxiv-page2.xml").read_bytes().replace(b">3<", b">1<")

    server.route = flaky
    assert fetch_to_jsonl("arxiv", "all:x", D(2025, 11, 1), D(2025, 11, 30), tmp_path / "a.jsonl") == 1
    assert calls["n"] == 2
    server.route = lambda path, p: (503, "text/plain", b"down for maintenance")
    out = tmp_path / "b.jsonl"
    with pytest.raises(BadInput, match=r"arxiv: GET .* answered HTTP 503"):
        fetch_to_jsonl("arxiv", "all:x", D(2025, 11, 1), D(2025, 11, 30), out)
    assert not out.exists() and not list(tmp_path.glob(".b.jsonl*"))  # nothing half-written
    server.route = lambda path, p: (200, "application/atom+xml", (FIX / "arxiv-error.xml").read_bytes())
    with pytest.raises(BadInput, match="the API reports an error: incorrect id format"):
        fetch_to_jsonl("arxiv", "all:x", D(2025, 11, 1), D(2025, 11, 30), out)


def test_ads_token_paging_and_fields(server, tmp_path, monkeypatch):
    pages = {"0": "ads-page1.json", "2": "ads-page2.json"}
    server.route = lambda path, p: (200, "application/json", (FIX / pages[p["start"]]).read_bytes())
    monkeypatch.setattr("backtest.corpus.fetch.AdsApi.page_size", 2)
    out = tmp_path / "ads.jsonl"
    monkeypatch.delenv("ADS_API_TOKEN", raising=False)
    with pytest.raises(BadInput, match="set ADS_API_TOKEN"):
        fetch_to_jsonl("ads", 'abs:"exoplanet"', D(2019, 1, 1), D(2019, 12, 31), out)
    assert not server.requests
    monkeypatch.setenv("ADS_API_TOKEN", "sekret-token-123")
    assert fetch_to_jsonl("ads", 'abs:"exoplanet"', D(2019, 1, 1), D(2019, 12, 31), out) == 3
    assert all(r["headers"]["Authorization"] == "Bearer sekret-token-123" for r in server.requests)
    assert server.requests[0]["params"]["q"] == '(abs:"exoplanet") pubdate:[2019-01 TO 2019-12]'
    assert "sekret" not in out.read_text()
    rows = {r["id"]: r for r in _read(out)}
    first = rows["2019ApJ...870...12A"]
    assert first["published"] == "2019-01-01"  # ADS day 00 -> 01
    assert first["title"] == "Clouds on a Warm Neptune" and first["abstract"] == "We detect clouds on a warm Neptune."
    assert first["doi"] == "10.3847/1538-4357/aaf000" and first["categories"] == ["astro-ph.EP"]
    assert first["citation_count"] == 14 and first["references"] == ["2010ApJ...700..100X", "2015Natur.500..200Y"]
    assert first["citation_count_as_of"] == dt.datetime.now(dt.timezone.utc).date().isoformat()
    assert rows["2019MNRAS.483.4567C"]["abstract"] == ""  # kept here; `corpus build` drops and counts it
    assert rows["2019AJ....158...33D"]["published"] == "2019-07-15"


def test_openalex_cursor_paging_and_inverted_abstracts(server, tmp_path):
    def route(path, p):
        return (
            200,
            "application/json",
            (FIX / ("openalex-page1.json" if p["cursor"] == "*" else "openalex-page2.json")).read_bytes(),
        )

    server.route = route
    out = tmp_path / "oa.jsonl"
    assert fetch_to_jsonl("openalex", "ozone", D(2019, 1, 1), D(2019, 12, 31), out) == 3
    params = [r["params"] for r in server.requests]
    assert [p["cursor"] for p in params] == [
        "*",
        "IlsxNjA5MzcyODAwMDAwLCAnaHR0cHM6Ly9vcGVuYWxleC5vcmcvVzI3NDE4MDk4MDcnXSI=",
    ]
    assert params[0]["filter"] == "from_publication_date:2019-01-01,to_publication_date:2019-12-31"
    assert params[0]["search"] == "ozone"
    rows = _read(out)
    assert [r["id"] for r in rows] == ["W2741809807", "W2000000002", "W3000000003"]  # the repeat is dropped
    first = rows[0]
    assert first["abstract"] == "Ozone is recovering but the trend is uneven."
    assert first["doi"] == "10.1000/ozone.2019" and first["authors"] == ["Maria Rossi", "Tom Berg"]
    assert first["references"] == ["W100", "W200"] and first["categories"] == ["Atmospheric Ozone and Climate"]
    assert rows[1]["abstract"] == "" and "doi" not in rows[1]


def test_window_max_records_and_bad_answers(server, tmp_path):
    server.route = lambda path, p: (
        200,
        "application/json",
        (FIX / "openalex-page1.json").read_bytes().replace(b'"next_cursor": "Ils', b'"next_cursor": null, "x": "Ils'),
    )
    out = tmp_path / "oa.jsonl"
    # the service's dates are re-checked by day: 2019-05-01 is outside a March window
    assert fetch_to_jsonl("openalex", "ozone", D(2019, 3, 1), D(2019, 3, 31), out) == 1
    assert fetch_to_jsonl("openalex", "ozone", D(2019, 1, 1), D(2019, 12, 31), out, max_records=1) == 1
    server.route = lambda path, p: (200, "application/json", b'{"meta": {}, "results": "oops"}')
    with pytest.raises(BadInput, match="openalex: page 1: no 'results' list"):
        fetch_to_jsonl("openalex", "ozone", D(2019, 1, 1), D(2019, 12, 31), out)
    server.route = lambda path, p: (200, "application/json", b"<html>not json</html>")
    with pytest.raises(BadInput, match="response is not JSON"):
        fetch_to_jsonl("openalex", "ozone", D(2019, 1, 1), D(2019, 12, 31), out)
    assert len(_read(out)) == 1  # the earlier good file is untouched by the failed fetches


def test_inverted_index_rebuild():
    assert abstract_from_inverted_index({"b": [1], "a": [0, 2]}) == "a b a"
    assert abstract_from_inverted_index(None) == ""
    with pytest.raises(BadInput):
        abstract_from_inverted_index({"a": "0"})


def test_fetch_cli(server, tmp_path, cli):
    server.route = lambda path, p: (
        200,
        "application/atom+xml",
        (FIX / "arxiv-page2.xml").read_bytes().replace(b">3<", b">1<"),
    )
    out = tmp_path / "cli.jsonl"
    code, stdout, err = cli(
        ["corpus", "fetch", "arxiv", "--query", "all:hot", "--start", "2025-11-01", "--end", "2025-11-30", "--out", out]
    )
    assert code == 0, err
    assert "fetched 1 records from arxiv" in stdout and _read(out)[0]["id"] == "2511.05678"
    code, _, err = cli(
        ["corpus", "fetch", "arxiv", "--query", "all:hot", "--start", "2025-12-01", "--end", "2025-11-30", "--out", out]
    )
    assert code == 2 and "empty window" in err
