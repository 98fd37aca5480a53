"""What a campaign runs: its targets, budget, driver and where it keeps things; saved in the run folder to resume."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.drivers import DEFAULT_DRIVER
from harness.runner.libfuzzer import CORPUS_DIR, FUZZ_DIR

DEFAULT_BUDGET_S = 180.0
DEFAULT_TIMEOUT_S = 20  # libFuzzer's per-input -timeout; above the targets' own 10 s wait, so they name hangs first
DEFAULT_MINIMIZE_S = 30.0
DB_ENV = "NNFUZZ_FINDINGS_DB"
WORK_CORPUS_ENV = "NNFUZZ_WORK_CORPUS"
RUNS_DIR = Path("runs")


def default_db_path() -> Path:
    """The findings database: NNFUZZ_FINDINGS_DB, else runs/findings.sqlite."""
    return Path(os.environ.get(DB_ENV) or RUNS_DIR / "findings.sqlite")


def default_work_corpus() -> Path:
    """The working corpora every campaign of a runs/ folder shares: NNFUZZ_WORK_CORPUS, else runs/corpus."""
    return Path(os.environ.get(WORK_CORPUS_ENV) or RUNS_DIR / "corpus")


@dataclass(frozen=True)
class TargetSpec:
    """A campaign target: the reference the runner resolves, its name, and its Atheris script."""

    ref: str  # a registered target name or a module:attribute spec
    name: str  # the registered name (folder names, reports)
    script: Path

    @classmethod
    def named(cls, name: str, fuzz_dir: Path = FUZZ_DIR) -> TargetSpec:
        """The built-in target `name` and its script fuzz/fuzz_<name>.py."""
        return cls(name, name, fuzz_dir / f"fuzz_{name}.py")

    def to_json(self) -> dict:
        """A JSON-ready dict."""
        return {"ref": self.ref, "name": self.name, "script": str(self.script)}

    @classmethod
    def from_json(cls, d: dict) -> TargetSpec:
        """The spec a to_json dict describes."""
        return cls(d["ref"], d["name"], Path(d["script"]))


def available_targets(fuzz_dir: Path = FUZZ_DIR) -> list[str]:
    """The targets that have a fuzz script, sorted."""
    return sorted(p.stem.removeprefix("fuzz_") for p in fuzz_dir.glob("fuzz_*.py"))


@dataclass
class CampaignConfig:
    """A campaign's settings."""

    targets: Sequence[TargetSpec]
    out_dir: Path
    budget_s: float = DEFAULT_BUDGET_S
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    driver: str = DEFAULT_DRIVER
    faults: Sequence[str] = ()
    corpus_root: Path = CORPUS_DIR  # the seeds, read from <corpus_root>/<target> and never written
    # The working corpora: <work_corpus>/<target> is where libFuzzer keeps what it finds, read back by the next
    # campaign that shares it. None: the run folder's own targets/<target>/corpus (nothing shared).
    work_corpus: Path | None = None
    db_path: Path = field(default_factory=default_db_path)
    timeout_s: int = DEFAULT_TIMEOUT_S
    minimize_s: float = DEFAULT_MINIMIZE_S  # per new signature
    coverage: bool = True
    extra_args: Sequence[str] = ()  # more libFuzzer flags for every worker
    sample_s: float = 5.0  # between timeline samples
    # After this many crashes of one target, its workers keep going after a crash (libFuzzer -fork=1), so that a
    # bug hit every few seconds no longer costs a restart (and a corpus reload) each time.
    fork_after_crashes: int = 3

    def seed_corpus(self, target: str) -> Path:
        """The committed seeds of a target."""
        return self.corpus_root / target

    def working_corpus(self, target: str) -> Path:
        """Where a target's working corpus lives: shared under work_corpus, or in the run folder."""
        if self.work_corpus is None:
            return self.out_dir / "targets" / target / "corpus"
        return self.work_corpus / target

    def to_json(self) -> dict:
        """campaign.json."""
        d = asdict(self)
        d["targets"] = [t.to_json() for t in self.targets]
        for key in ("out_dir", "corpus_root", "db_path", "work_corpus"):
            d[key] = None if d[key] is None else str(d[key])
        d["faults"], d["extra_args"] = list(self.faults), list(self.extra_args)
        return d

    @classmethod
    def from_json(cls, d: dict) -> CampaignConfig:
        """The settings a campaign.json holds."""
        known = set(cls.__dataclass_fields__)
        values = {k: v for k, v in d.items() if k in known}
        values["targets"] = [TargetSpec.from_json(t) for t in d["targets"]]
        for key in ("out_dir", "corpus_root", "db_path", "work_corpus"):
            if values.get(key) is not None:
                values[key] = Path(values[key])
        return cls(**values)
