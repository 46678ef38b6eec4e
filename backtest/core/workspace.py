"""Where a project's files live: corpora, manifests, frozen sets, judges and results.

The root is ``--root``/``BACKTEST_HOME`` or the current directory. Every path the
library writes is derived here so that tests can point a whole run at a temp folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from backtest.core.errors import BadInput
from backtest.core.records import check_safe_name


@dataclass(frozen=True)
class Workspace:
    """The folders of one backtest project."""

    root: Path

    @classmethod
    def from_env(cls, root: str | os.PathLike[str] | None = None) -> "Workspace":
        """The workspace at ``root``, else ``$BACKTEST_HOME``, else the current directory."""
        chosen = root or os.environ.get("BACKTEST_HOME") or os.getcwd()
        return cls(Path(chosen).resolve())

    @classmethod
    def of_run(cls, run_dir: str | os.PathLike[str]) -> "Workspace":
        """The workspace a run folder (``ROOT/results/<instance>/<system>/<run>``) belongs to."""
        parents = Path(run_dir).resolve().parents
        if len(parents) < 4:
            raise BadInput(f"{run_dir}: not a run folder inside a workspace (ROOT/results/<instance>/<system>/<run>)")
        return cls(parents[3])

    @property
    def corpora(self) -> Path:
        return self.root / "corpora"

    @property
    def manifests(self) -> Path:
        return self.root / "manifests"

    @property
    def frozen(self) -> Path:
        return self.root / "frozen"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def judges(self) -> Path:
        return self.root / "judges"

    @property
    def ledger(self) -> Path:
        return self.frozen / "LEDGER.jsonl"

    @property
    def cache(self) -> Path:
        return self.root / ".cache"

    def corpus_dir(self, corpus_id: str) -> Path:
        """``corpora/<id>/``: built records, index and retrieval indexes."""
        return self.corpora / check_safe_name(corpus_id, "corpus id")

    def manifest_path(self, corpus_id: str) -> Path:
        """``manifests/<id>.json``."""
        return self.manifests / f"{check_safe_name(corpus_id, 'corpus id')}.json"

    def instance_path(self, instance_id: str) -> Path:
        """``manifests/instances/<id>.json``."""
        return self.manifests / "instances" / f"{check_safe_name(instance_id, 'instance id')}.json"

    def check_output(self, path: str | os.PathLike[str]) -> Path:
        """``path`` unless it lies in frozen/ or manifests/, is corpora/ itself, or lies in a built corpus
        (``corpora/<id>/`` with a manifest or records): those only their own commands write (freeze, corpus
        build, instance create). BadInput naming the folder otherwise."""

        resolved = Path(path).resolve()

        def inside(folder: Path) -> bool:
            folder = folder.resolve()
            return resolved == folder or folder in resolved.parents

        owned = [self.frozen, self.manifests]
        corpora = self.corpora.resolve()
        if resolved == corpora:
            owned.append(self.corpora)
        elif corpora in resolved.parents:
            name = resolved.relative_to(corpora).parts[0]
            if (self.manifests / f"{name}.json").is_file() or (corpora / name / "records.jsonl").is_file():
                owned.append(corpora / name)
        for folder in owned:
            if inside(folder):
                raise BadInput(
                    f"{path}: inside {self.relative(folder)}/, which only its own commands write "
                    f"(freeze, corpus build, instance create); choose another output path"
                )
        return Path(path)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """``path`` relative to the root (POSIX form) when it lies inside it, else the absolute path.

        Inside is decided on the path as written first (made absolute, ``..`` folded, links not followed), so a
        file reached through a workspace folder that is a link (a replay's scratch workspace links ``judges/``)
        is named by its place in this workspace; then on the resolved path."""
        written = Path(os.path.abspath(path))
        for candidate, root in ((written, Path(os.path.abspath(self.root))), (Path(path).resolve(), self.root)):
            try:
                return candidate.relative_to(root).as_posix()
            except ValueError:
                continue
        return str(Path(path).resolve())
