"""Fetchers: download records from the arXiv API, NASA ADS or OpenAlex into CorpusRecord JSONL.

``backtest corpus fetch SERVICE --query Q --start D --end D --out FILE`` pages through a
service's search results with ``requests``, waits between calls (arXiv asks for 3 s),
retries 429/5xx and connection failures with exponential backoff (honouring
``Retry-After``), and writes the records atomically, one canonical JSON line each,
de-duplicated by id in the order the service returned them. Build a corpus from the
file with ``backtest corpus build --source jsonl``.

Base URLs and waits come from the environment so tests (and mirrors) can redirect them:
``BACKTEST_ARXIV_API_URL``, ``BACKTEST_ADS_API_URL``, ``BACKTEST_OPENALEX_API_URL`` and
``BACKTEST_<SERVICE>_MIN_INTERVAL`` (seconds between calls). ADS reads its token from
``ADS_API_TOKEN`` at call time; it is sent in a header and never written or logged.
OpenAlex uses ``OPENALEX_MAILTO`` (optional) for its polite pool.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from backtest.core.errors import BadInput, redact
from backtest.core.fileio import atomic_writer
from backtest.core.records import CorpusRecord, parse_record
from backtest.core.registry import Registry
from backtest.corpus.sources import clean_text, named, strip_arxiv_version

USER_AGENT = "backtest-corpus-fetch/0.1 (+https://github.com/; research-question backtesting)"
RETRY_STATUSES = (429, 500, 502, 503, 504)


# --------------------------------------------------------------------------- HTTP with waits and retries


def make_session(retries: int = 5, backoff: float | None = None) -> requests.Session:
    """A ``requests`` session that retries GETs on 429/5xx and connection errors with exponential backoff.

    ``backoff`` (default ``$BACKTEST_FETCH_BACKOFF`` or 2 s) doubles per retry; a
    ``Retry-After`` header from the server takes precedence.
    """
    if backoff is None:
        backoff = float(os.environ.get("BACKTEST_FETCH_BACKOFF", "2"))
    retry = Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        backoff_factor=backoff,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET"}),
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = USER_AGENT
    return session


class Throttle:
    """Keeps at least ``min_interval`` seconds between the starts of successive calls."""

    def __init__(
        self,
        min_interval: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.min_interval = min_interval
        self.clock = clock
        self.sleep = sleep
        self._last: float | None = None

    def wait(self) -> None:
        """Sleep as long as needed since the previous call, then mark this one."""
        if self._last is not None:
            remaining = self.min_interval - (self.clock() - self._last)
            if remaining > 0:
                self.sleep(remaining)
        self._last = self.clock()


@dataclass
class Client:
    """One service's HTTP access: a session, a throttle and extra headers (never logged)."""

    service: str
    session: requests.Session
    throttle: Throttle
    headers: dict[str, str]
    timeout: float = 60.0

    def get(self, url: str, params: dict[str, Any]) -> requests.Response:
        """GET with the throttle and the session's retries; BadInput (one line, no secrets) on failure."""
        self.throttle.wait()
        try:
            response = self.session.get(url, params=params, headers=self.headers, timeout=self.timeout)
        except requests.RequestException as exc:
            raise BadInput(f"{self.service}: GET {url} failed after retries ({exc.__class__.__name__})") from None
        if response.status_code != 200:
            secrets = [
                v for value in self.headers.values() for v in (value, value.split()[-1] if value.split() else "")
            ]
            raise BadInput(
                f"{self.service}: GET {response.url} answered HTTP {response.status_code} "
                f"({' '.join((redact(response.text, secrets) or '')[:200].split())})"
            )
        return response

    def get_json(self, url: str, params: dict[str, Any], where: str) -> dict[str, Any]:
        """GET and decode a JSON object; BadInput naming ``where`` when it is not one."""
        response = self.get(url, params)
        try:
            data = response.json()
        except ValueError:
            raise BadInput(f"{self.service}: {where}: response is not JSON") from None
        if not isinstance(data, dict):
            raise BadInput(f"{self.service}: {where}: expected a JSON object")
        return data


# --------------------------------------------------------------------------- fetchers


class Fetcher(Protocol):
    """A service: pages of records for a query and an inclusive date window."""

    name: str
    env_url: str
    default_url: str
    default_interval: float

    def records(
        self, client: Client, base_url: str, query: str, start: dt.date, end: dt.date, max_records: int
    ) -> Iterator[CorpusRecord]:
        """Yield records page by page (at most about ``max_records``)."""

    def headers(self) -> dict[str, str]:
        """Extra request headers (ADS: the bearer token)."""


# Services ``corpus fetch --service NAME`` reads. Plugins: entry-point group ``backtest.fetchers``.
FETCHERS: Registry[Callable[[], Fetcher]] = Registry(
    "service",
    "fetchers",
    {
        "arxiv": "backtest.corpus.fetch:ArxivApi",
        "ads": "backtest.corpus.fetch:AdsApi",
        "openalex": "backtest.corpus.fetch:OpenAlexApi",
    },
)


def _record(data: dict[str, Any], where: str) -> CorpusRecord:
    return parse_record(CorpusRecord, data, where)


def _offset_pages(
    max_records: int, page_size: int, fetch_page: Callable[[int, int, str], tuple[list, int]]
) -> Iterator[tuple[str, list]]:
    """``start``/``rows`` paging: ``(where, items)`` per page until ``max_records``, the total or an empty page.

    ``fetch_page(offset, rows, where)`` fetches one page and returns its items and the
    service's total count of results.
    """
    offset = 0
    while offset < max_records:
        where = f"page at start={offset}"
        items, total = fetch_page(offset, min(page_size, max_records - offset), where)
        yield where, items
        offset += len(items)
        if not items or offset >= total:
            return


class _NoCredentials:
    """Base of the services that need no credentials."""

    def headers(self) -> dict[str, str]:
        """No extra request headers."""
        return {}


# ----- arXiv API (Atom)

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
_ABS_URL = re.compile(r"^https?://arxiv\.org/abs/(.+)$")  # the id loses its version: strip_arxiv_version


@named("arxiv")
class ArxivApi(_NoCredentials):
    """The arXiv API (``/api/query``, an Atom feed), sorted by submission date, 3 s between calls."""

    env_url = "BACKTEST_ARXIV_API_URL"
    default_url = "https://export.arxiv.org/api/query"
    default_interval = 3.0
    page_size = 100

    def records(self, client, base_url, query, start, end, max_records):
        window = f"submittedDate:[{start:%Y%m%d}0000 TO {end:%Y%m%d}2359]"
        search = f"({query}) AND {window}"

        def fetch_page(offset: int, rows: int, where: str) -> tuple[list[ET.Element], int]:
            params = {
                "search_query": search,
                "start": offset,
                "max_results": rows,
                "sortBy": "submittedDate",
                "sortOrder": "ascending",
            }
            response = client.get(base_url, params)
            try:
                feed = ET.fromstring(response.content)
            except ET.ParseError as exc:
                raise BadInput(f"arxiv: {where}: bad Atom XML ({exc})") from None
            return feed.findall(f"{ATOM}entry"), int(feed.findtext(f"{OPENSEARCH}totalResults") or 0)

        for where, entries in _offset_pages(max_records, self.page_size, fetch_page):
            for i, entry in enumerate(entries):
                if entry.find(f"{ATOM}id") is not None and entry.findtext(f"{ATOM}title") == "Error":
                    raise BadInput(
                        f"arxiv: {where}: the API reports an error: {clean_text(entry.findtext(f'{ATOM}summary'))}"
                    )
                yield self._parse(entry, f"arxiv {where} entry {i + 1}")

    @staticmethod
    def _parse(entry: ET.Element, where: str) -> CorpusRecord:
        match = _ABS_URL.match((entry.findtext(f"{ATOM}id") or "").strip())
        if not match:
            raise BadInput(f"{where}: <id> is not an arXiv abstract URL")
        published = (entry.findtext(f"{ATOM}published") or "")[:10]
        return _record(
            {
                "id": strip_arxiv_version(match.group(1)),
                "title": clean_text(entry.findtext(f"{ATOM}title")),
                "abstract": clean_text(entry.findtext(f"{ATOM}summary")),
                "published": published,
                "categories": [c.get("term") for c in entry.findall(f"{ATOM}category") if c.get("term")],
                "authors": [clean_text(a.findtext(f"{ATOM}name")) for a in entry.findall(f"{ATOM}author")],
                "doi": (entry.findtext(f"{ARXIV}doi") or "").strip() or None,
                "source": "arxiv-api",
            },
            where,
        )


# ----- NASA ADS (/v1/search/query)


@named("ads")
class AdsApi:
    """NASA ADS search API; token from ``ADS_API_TOKEN``; ``start``/``rows`` paging."""

    env_url = "BACKTEST_ADS_API_URL"
    default_url = "https://api.adsabs.harvard.edu/v1/search/query"
    default_interval = 1.0
    page_size = 200
    fields = "bibcode,title,abstract,pubdate,author,doi,arxiv_class,keyword,citation_count,reference"

    def headers(self) -> dict[str, str]:
        token = os.environ.get("ADS_API_TOKEN", "").strip()
        if not token:
            raise BadInput(
                "ads: set ADS_API_TOKEN to your ADS API token (https://ui.adsabs.harvard.edu/user/settings/token)"
            )
        return {"Authorization": f"Bearer {token}"}

    def records(self, client, base_url, query, start, end, max_records):
        q = f"({query}) pubdate:[{start:%Y-%m} TO {end:%Y-%m}]"
        as_of = dt.datetime.now(dt.timezone.utc).date().isoformat()

        def fetch_page(offset: int, rows: int, where: str) -> tuple[list[dict[str, Any]], int]:
            params = {"q": q, "fl": self.fields, "start": offset, "rows": rows, "sort": "date asc, bibcode asc"}
            response = client.get_json(base_url, params, where).get("response")
            if not isinstance(response, dict) or not isinstance(response.get("docs"), list):
                raise BadInput(f"ads: {where}: no response.docs in the answer")
            return response["docs"], int(response.get("numFound") or 0)

        for where, docs in _offset_pages(max_records, self.page_size, fetch_page):
            for i, doc in enumerate(docs):
                yield self._parse(doc, as_of, f"ads {where} doc {i + 1}")

    @staticmethod
    def _parse(doc: dict[str, Any], as_of: str, where: str) -> CorpusRecord:
        title = doc.get("title") or [""]
        doi = doc.get("doi") or []
        citations = doc.get("citation_count")
        return _record(
            {
                "id": doc.get("bibcode"),
                "title": clean_text(title[0] if isinstance(title, list) else title),
                "abstract": clean_text(doc.get("abstract")),
                "published": _ads_day(doc.get("pubdate"), where),
                "categories": list(doc.get("arxiv_class") or []),
                "authors": list(doc.get("author") or []),
                "doi": (doi[0] if isinstance(doi, list) and doi else doi) or None,
                "references": doc.get("reference"),
                "citation_count": citations,
                "citation_count_as_of": as_of if citations is not None else None,
                "source": "ads",
            },
            where,
        )


def _ads_day(pubdate: Any, where: str) -> str:
    """ADS ``pubdate`` is ``YYYY-MM-DD`` with ``00`` for an unknown month or day; those become ``01``."""
    match = re.match(r"^(\d{4})-(\d{2})-(\d{2})$", str(pubdate or ""))
    if not match:
        raise BadInput(f"{where}: bad pubdate {pubdate!r}")
    year, month, day = match.groups()
    return f"{year}-{month if month != '00' else '01'}-{day if day != '00' else '01'}"


# ----- OpenAlex (/works, cursor paging)


@named("openalex")
class OpenAlexApi(_NoCredentials):
    """OpenAlex ``/works`` with ``search`` and a publication-date filter; cursor paging."""

    env_url = "BACKTEST_OPENALEX_API_URL"
    default_url = "https://api.openalex.org/works"
    default_interval = 0.2
    page_size = 200

    def records(self, client, base_url, query, start, end, max_records):
        cursor = "*"
        as_of = dt.datetime.now(dt.timezone.utc).date().isoformat()
        n = page = 0
        while cursor and n < max_records:
            page += 1
            params = {
                "search": query,
                "filter": f"from_publication_date:{start},to_publication_date:{end}",
                "per-page": self.page_size,
                "cursor": cursor,
            }
            if os.environ.get("OPENALEX_MAILTO"):
                params["mailto"] = os.environ["OPENALEX_MAILTO"]
            where = f"page {page}"
            data = client.get_json(base_url, params, where)
            results = data.get("results")
            if not isinstance(results, list):
                raise BadInput(f"openalex: {where}: no 'results' list in the answer")
            for i, work in enumerate(results):
                yield self._parse(work, as_of, f"openalex {where} result {i + 1}")
            n += len(results)
            cursor = (data.get("meta") or {}).get("next_cursor")
            if not results:
                return

    @staticmethod
    def _parse(work: dict[str, Any], as_of: str, where: str) -> CorpusRecord:
        doi = work.get("doi") or None
        topics = work.get("topics") or []
        citations = work.get("cited_by_count")
        return _record(
            {
                "id": str(work.get("id") or "").rsplit("/", 1)[-1],
                "title": clean_text(work.get("title") or work.get("display_name")),
                "abstract": clean_text(abstract_from_inverted_index(work.get("abstract_inverted_index"), where)),
                "published": work.get("publication_date"),
                "categories": [t["display_name"] for t in topics if isinstance(t, dict) and t.get("display_name")],
                "authors": [((a.get("author") or {}).get("display_name") or "") for a in work.get("authorships") or []],
                "doi": doi.removeprefix("https://doi.org/") if isinstance(doi, str) else None,
                "references": [r.rsplit("/", 1)[-1] for r in work.get("referenced_works") or []] or None,
                "citation_count": citations,
                "citation_count_as_of": as_of if citations is not None else None,
                "source": "openalex",
            },
            where,
        )


def abstract_from_inverted_index(index: Any, where: str = "abstract_inverted_index") -> str:
    """Rebuild an OpenAlex abstract from ``{word: [positions]}``; empty when there is none."""
    if not index:
        return ""
    if not isinstance(index, dict):
        raise BadInput(f"{where}: abstract_inverted_index must be an object")
    placed: dict[int, str] = {}
    for word, positions in index.items():
        if not isinstance(positions, list) or not all(isinstance(p, int) and p >= 0 for p in positions):
            raise BadInput(f"{where}: abstract_inverted_index[{word!r}] must be a list of positions")
        for pos in positions:
            placed[pos] = word
    return " ".join(placed[p] for p in sorted(placed))


# --------------------------------------------------------------------------- entry point


def fetch_to_jsonl(
    service: str,
    query: str,
    start: dt.date,
    end: dt.date,
    out: str | os.PathLike,
    max_records: int = 10000,
    session: requests.Session | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Fetch ``query`` from ``service`` for the inclusive window into ``out`` (atomic); return the record count.

    Records outside the window (by day) are dropped, as are repeated ids (first kept).
    ``session`` and ``sleep`` are injectable for tests.
    """
    factory = FETCHERS.get(service)
    if start > end:
        raise BadInput(f"empty window: {start} is after {end}")
    if max_records < 1:
        raise BadInput("--max-records must be at least 1")
    if not query.strip():
        raise BadInput("empty --query")
    fetcher = factory()
    base_url = os.environ.get(fetcher.env_url) or fetcher.default_url
    interval = float(os.environ.get(f"BACKTEST_{service.upper()}_MIN_INTERVAL", fetcher.default_interval))
    client = Client(service, session or make_session(), Throttle(interval, sleep=sleep), fetcher.headers())
    seen: set[str] = set()
    with atomic_writer(Path(out), "wb") as handle:
        for record in fetcher.records(client, base_url, query, start, end, max_records):
            if record.id in seen or not start <= record.published <= end:
                continue
            seen.add(record.id)
            handle.write(record.canonical_line().encode("utf-8") + b"\n")
            if len(seen) >= max_records:
                break
    return len(seen)
