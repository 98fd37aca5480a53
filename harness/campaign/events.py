"""What a campaign tells its reporters while it runs. The engine only emits these; printing is the caller's business."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.campaign.finding import Finding


@dataclass
class CampaignStarted:
    """The campaign begins (or resumes)."""

    run_dir: str
    resumed: bool
    budget_s: float
    remaining_s: float
    targets: list[str]
    jobs: int
    driver: str
    faults: list[str]


@dataclass
class PhaseStarted:
    """A phase begins: recheck, fuzz, triage, coverage, report."""

    phase: str
    detail: str = ""


@dataclass
class KnownRechecked:
    """A finding of an earlier campaign was replayed on the current driver."""

    finding: Finding
    status: str  # reproducing | fixed


@dataclass
class TargetStatus:
    """One target's live figures."""

    execs: int = 0
    execs_per_second: int = 0
    corpus: int = 0  # working-corpus entries found by this campaign
    coverage: int | None = None  # libFuzzer cov:
    features: int | None = None  # libFuzzer ft:
    findings: int = 0  # distinct signatures
    workers: int = 0  # libFuzzer processes running now
    restarts: int = 0  # processes restarted after a crash


@dataclass
class Tick:
    """About once a second while fuzzing."""

    elapsed_s: float
    budget_s: float
    targets: dict[str, TargetStatus] = field(default_factory=dict)


@dataclass
class WorkerEnded:
    """A libFuzzer process ended: "crash" (it found something), "time", "stopped" or "error"."""

    target: str
    reason: str
    exit_code: int | None
    seconds: float
    log: str


@dataclass
class FindingReported:
    """An artifact was triaged into a finding: new to the database, known from earlier, or a repeat in this run."""

    finding: Finding
    kind: str  # new | known | duplicate


@dataclass
class Unreproduced:
    """An artifact that passes when replayed alone (kept, listed, not a finding)."""

    target: str
    artifact: str


@dataclass
class CorpusLoaded:
    """A target starts from its seeds and from what earlier campaigns left in its working corpus."""

    target: str
    seeds: int
    carried: int  # working-corpus entries there at the start
    seed_folder: str
    working_folder: str


@dataclass
class CoverageProgress:
    """Corpus entries replayed under coverage so far."""

    done: int
    total: int


@dataclass
class CoverageMeasured:
    """Branch coverage of the driver after replaying the corpus."""

    covered: int
    total: int
    ok: bool = True
    detail: str = ""
    start: int = 0  # covered at time 0: by the seeds and the entries earlier campaigns left
    html: str = ""  # the line-by-line report's index.html


@dataclass
class ReportWritten:
    """report.json and report.html are written."""

    json_path: str
    html_path: str


@dataclass
class CampaignDone:
    """The campaign finished (or stopped early when interrupted)."""

    run_dir: str
    interrupted: bool
    new: int
    known: int
    fixed: int
    report_html: str


Event = (
    CampaignStarted
    | PhaseStarted
    | KnownRechecked
    | Tick
    | WorkerEnded
    | FindingReported
    | Unreproduced
    | CorpusLoaded
    | CoverageProgress
    | CoverageMeasured
    | ReportWritten
    | CampaignDone
)
