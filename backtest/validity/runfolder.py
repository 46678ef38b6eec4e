"""A run folder, read and written in one place: :class:`RunFolder`.

A run folder (``results/<instance>/<system>/<run_id>/``, a control run beside it, an imported run) holds
``RUN.json`` (:class:`~backtest.core.runs.Run`), ``retrieval.jsonl`` and ``judgments.jsonl``
(:class:`~backtest.core.records.Retrieval` and :class:`~backtest.core.records.Judgment` lines),
``metrics.json`` (:class:`~backtest.core.runs.Metrics`), ``contamination.json``
(:class:`~backtest.validity.outputs.ContaminationReport`) and, once finished, ``SEAL.json``
(:class:`~backtest.core.runs.RunSeal`). Every reader of a run goes through :class:`RunFolder`: the header
alone (``RunFolder(path).run``, what a listing needs) or the whole run, each file read when first asked
for and then kept. ``RUN.json`` is written only by :meth:`RunFolder.write_run`, which takes a
:class:`~backtest.core.runs.Run` (a record that refuses unknown fields), never a dict.

It lives in ``validity/``, the lowest stage that reads a run (the leakage checks); ``scoring/`` (which writes
runs), ``analysis/`` and ``studies/`` sit above it. The seal primitives live here too, since the readers
check it: :func:`seal_bytes`, :func:`write_seal`, :func:`seal_problems` and :func:`check_seal`
(:mod:`backtest.scoring.runseal` adds what ``backtest verify`` checks beyond the seal).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

from backtest.core.errors import BadInput, CheckFailed
from backtest.core.fileio import atomic_write_bytes, iter_jsonl, read_json
from backtest.core.records import Judgment, Retrieval, output_bytes, parse_record, read_output, write_output
from backtest.core.runs import Metrics, Run, RunCost, RunSeal
from backtest.core.seal import sha256_bytes, sha256_file
from backtest.core.workspace import Workspace
from backtest.retrieve.compact import read_retrievals, rematerialise
from backtest.validity.outputs import ContaminationReport

RUN_FILE = "RUN.json"
CONTAMINATION_FILE = "contamination.json"
SEAL_FILE = "SEAL.json"
#: the files a seal covers (those a run holds; the reports are redrawn from them and are not sealed)
SEALED = ("RUN.json", "judgments.jsonl", "retrieval.jsonl", "metrics.json", "contamination.json")


class RunFolder:
    """One run folder: its header (:attr:`run`), and lazily its judgments, retrievals, metrics, contamination
    report and cost; :meth:`write_run` and :meth:`write_metrics` write its records through their models."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._retrievals: dict[tuple[bool, Path | None], list[Retrieval]] = {}

    @classmethod
    def open(cls, path: str | Path) -> RunFolder:
        """The run folder at ``path``: BadInput (one line) when it holds no ``RUN.json``."""
        folder = cls(path)
        if not folder.has(RUN_FILE):
            raise BadInput(f"{folder.path}: not a run folder (no {RUN_FILE})")
        return folder

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def file(self, name: str) -> Path:
        """The path of one of the run's files (whether or not it exists)."""
        return self.path / name

    def has(self, name: str) -> bool:
        """True when the run holds the file ``name``."""
        return self.file(name).is_file()

    def require(self, *names: str) -> RunFolder:
        """BadInput naming the first of ``names`` the run does not hold (an unfinished run)."""
        for name in names:
            if not self.has(name):
                raise BadInput(f"{self.path}: {name} is missing (is the run complete? rerun `backtest score`)")
        return self

    # ------------------------------------------------------------------ reading

    @cached_property
    def run(self) -> Run:
        """``RUN.json`` as its model (the header: what was scored with what, and how it ended)."""
        if not self.has(RUN_FILE):
            raise BadInput(f"{self.path}: not a run folder (no {RUN_FILE})")
        return read_output(Run, self.file(RUN_FILE))

    @cached_property
    def judgments(self) -> list[Judgment]:
        """``judgments.jsonl``, in file order (empty when the run has none yet)."""
        return self._lines("judgments.jsonl", Judgment)

    def retrievals(self, ws: Workspace | None = None, text: bool = True) -> list[Retrieval]:
        """``retrieval.jsonl`` (empty when the run has none yet). With ``text`` (the default), a committed
        (compact) run's documents get the text the judge was shown, cut again from the sealed corpus of ``ws``
        (default: the run's own workspace) and checked, or CheckFailed
        (:func:`~backtest.retrieve.compact.read_retrievals`); without, the lines as stored (ids, ranks, dates:
        what the leakage checks read)."""
        key = (text, ws.root if ws else None)
        if key not in self._retrievals:
            if not self.has("retrieval.jsonl"):
                self._retrievals[key] = []
            elif text:
                self._retrievals[key] = read_retrievals(self.file("retrieval.jsonl"), self.run.instance_id, ws)
            else:
                self._retrievals[key] = self._lines("retrieval.jsonl", Retrieval)
        return self._retrievals[key]

    def shown_retrievals(self) -> list[dict[str, Any]]:
        """``retrieval.jsonl``'s lines as a reader is shown them (the leaderboard site): a compact run's documents
        get their text cut again where the sealed corpus is at hand, else a ``text_missing`` saying why; never
        refused (:func:`~backtest.retrieve.compact.rematerialise`)."""
        path = self.file("retrieval.jsonl")
        rows = [row for _, row in iter_jsonl(path)] if path.is_file() else []
        return rematerialise(self.path, self.run.instance_id, rows)

    def rows(self, name: str) -> Iterator[tuple[int, Any]]:
        """The numbered lines of one of the run's JSONL files as stored, unchecked: for the checks that report
        what is wrong with a run instead of refusing it (``backtest verify``) and for copying a run as it is."""
        return iter_jsonl(self.file(name))

    def header_data(self) -> Any:
        """``RUN.json`` as stored, unchecked (None without one): for telling a run folder from another folder and
        naming a run beside label files, where a malformed header is not this reader's to refuse."""
        return read_json(self.file(RUN_FILE)) if self.has(RUN_FILE) else None

    def file_bytes(self, names: Iterable[str]) -> dict[str, bytes]:
        """The bytes of those of ``names`` the run holds (name -> bytes)."""
        return {name: self.file(name).read_bytes() for name in names if self.has(name)}

    @cached_property
    def metrics(self) -> Metrics:
        """``metrics.json`` as its model (BadInput when the run has none: it is not finished)."""
        self.require("metrics.json")
        return read_output(Metrics, self.file("metrics.json"))

    @cached_property
    def contamination(self) -> ContaminationReport | None:
        """``contamination.json``, the probe's report (None where the probe did not run)."""
        if not self.has(CONTAMINATION_FILE):
            return None
        return read_output(ContaminationReport, self.file(CONTAMINATION_FILE))

    @property
    def cost(self) -> RunCost | None:
        """The judge's tokens and cost (``RUN.json``'s ``cost``; None for a run that recorded none)."""
        return self.run.cost

    def frozen_path(self, ws: Workspace) -> Path:
        """The frozen set folder the run names (``frozen_path``, relative to ``ws``'s root)."""
        frozen = Path(self.run.frozen_path)
        return frozen if frozen.is_absolute() else ws.root / frozen

    def _lines(self, name: str, model: type[Judgment] | type[Retrieval]) -> list:
        path = self.file(name)
        if not path.is_file():
            return []
        return [parse_record(model, obj, f"{path}:{n}") for n, obj in iter_jsonl(path)]

    # ------------------------------------------------------------------ the seal

    def seal_problems(self, required: bool = False) -> list[str]:
        """How the run's files differ from its seal, one line each (a missing seal is one when ``required``)."""
        return seal_problems(self.path, required)

    def check_seal(self) -> RunFolder:
        """CheckFailed naming the first file that differs from the run's seal (nothing when it is unsealed)."""
        check_seal(self.path)
        return self

    # ------------------------------------------------------------------ writing

    def write_run(self, run: Run) -> Path:
        """Write ``RUN.json`` (checked against :class:`~backtest.core.runs.Run`, atomically)."""
        path = write_output(self.file(RUN_FILE), Run, run)
        self.__dict__["run"] = run
        return path

    def write_metrics(self, metrics: Metrics) -> Path:
        """Write ``metrics.json`` (checked against :class:`~backtest.core.runs.Metrics`, atomically)."""
        path = write_output(self.file("metrics.json"), Metrics, metrics)
        self.__dict__["metrics"] = metrics
        return path

    def write_seal(self, run_id: str | None = None) -> Path:
        """Seal the files the run holds now (atomically)."""
        return write_seal(self.path, run_id or self.run.run_id)


def seal_bytes(run_id: str, files: dict[str, bytes]) -> bytes:
    """``SEAL.json``'s bytes for a run's files (name -> bytes; names outside :data:`SEALED` are left out)."""
    seal = RunSeal(schema_version="1", run_id=run_id, files={n: sha256_bytes(files[n]) for n in SEALED if n in files})
    return output_bytes(seal)


def write_seal(run_dir: Path, run_id: str) -> Path:
    """Seal the files ``run_dir`` holds now (atomically)."""
    files = RunFolder(run_dir).file_bytes(SEALED)
    return atomic_write_bytes(run_dir / SEAL_FILE, seal_bytes(run_id, files))


def seal_problems(run_dir: Path, required: bool = False) -> list[str]:
    """How ``run_dir``'s files differ from its seal, one line each; a missing seal is a problem when
    ``required``."""
    path = run_dir / SEAL_FILE
    if not path.is_file():
        return [f"{SEAL_FILE} is missing: the run was not sealed when it finished"] if required else []
    seal = read_output(RunSeal, path)
    problems = [
        f"{name} differs from its seal ({SEAL_FILE})"
        if (run_dir / name).is_file()
        else f"{name} is missing (its seal names it)"
        for name, digest in sorted(seal.files.items())
        if not (run_dir / name).is_file() or sha256_file(run_dir / name) != digest
    ]
    problems += [
        f"{name} is not in its seal ({SEAL_FILE})"
        for name in SEALED
        if (run_dir / name).is_file() and name not in seal.files
    ]
    return problems


def check_seal(run_dir: str | Path) -> None:
    """CheckFailed naming the first file of ``run_dir`` that differs from its seal (nothing when unsealed)."""
    problems = seal_problems(Path(run_dir))
    if problems:
        raise CheckFailed(f"{run_dir}: {problems[0]}; the run was changed after it was finished", problems)
