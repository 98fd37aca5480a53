"""Evaluating the harness against the driver's fault catalogue: is each planted bug found, and how fast.

For each fault the driver is started with that fault alone (through its factory, `faults=[name]`) in a worker
process, and seeded random cases of the targets run round-robin until one fails or the budget is spent. A
failure counts for the fault only if the same case passes on the fault-free driver; otherwise it is a false
alarm. The fault-free driver also gets the same budget on its own: anything found there is a false alarm too.

The catalogue is read from the driver's `faults` module as metadata only (names, areas, descriptions); the
driver itself is reached only through the HAL, by its `module:factory` spec. Progress and results are reported
as events; printing them is the caller's business.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.case.files import dump_case
from harness.drivers import DEFAULT_DRIVER
from harness.runner import FailedCase, WorkerPool, resolve_target
from harness.runner.hunt import BATCH_S, Hunt, passes_on
from harness.runner.replay import repro_command

CATALOGUE_MODULE = "driver_under_test.faults"
# Registered targets an evaluation leaves out unless asked for by name, with the reason. A failure on the fault-free
# driver counts as a false alarm; the differential target judges third-party engines against each other, so there
# it finds those engines' own bugs (real findings, not the harness's mistakes), while a planted fault of the
# driver's kernels is the execution target's to find.
NOT_BY_DEFAULT = {"differential": "it judges the driver's engines against each other, not the driver"}
DEFAULT_BUDGET_S = 60.0
# Longer than the targets' own wait for a callback (10 s), so that they report an asynchronous hang themselves.
DEFAULT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class FaultInfo:
    """A catalogued fault, as metadata."""

    name: str
    area: str
    description: str


def default_targets(registered: Sequence[str]) -> list[str]:
    """The targets an evaluation runs when none are named: every registered one but those NOT_BY_DEFAULT."""
    return sorted(t for t in registered if t not in NOT_BY_DEFAULT)


def load_catalogue(module: str = CATALOGUE_MODULE) -> list[FaultInfo]:
    """The fault catalogue a driver's faults module declares (its CATALOGUE: name -> object with area, description)."""
    catalogue = importlib.import_module(module).CATALOGUE
    return [FaultInfo(f.name, f.area, f.description) for f in catalogue.values()]


def catalogue_module_for(driver_spec: str) -> str:
    """The faults module of the package a driver spec's factory lives in (driver_under_test.faults by default)."""
    return driver_spec.partition(":")[0].split(".")[0] + ".faults"


@dataclass
class FaultResult:
    """Whether and how fast a fault was found."""

    name: str
    area: str
    found: bool = False
    seconds: float | None = None  # time to the finding, excluding worker start-up
    target: str | None = None
    rule: str | None = None

    def to_json(self) -> dict:
        """The report's entry."""
        seconds = None if self.seconds is None else round(self.seconds, 3)
        return {
            "name": self.name,
            "area": self.area,
            "found": self.found,
            "seconds": seconds,
            "target": self.target,
            "rule": self.rule,
        }


@dataclass
class FalseAlarm:
    """A failure the fault-free driver shows as well."""

    fault: str | None  # the fault run it turned up in (None: the fault-free run)
    target: str
    rule: str | None
    title: str
    signature: str
    seconds: float
    case_file: str | None = None
    repro: str | None = None  # the `nnfuzz repro` command of the case file

    def to_json(self) -> dict:
        """The report's entry."""
        return {
            "fault": self.fault,
            "target": self.target,
            "rule": self.rule,
            "title": self.title,
            "signature": self.signature,
            "seconds": round(self.seconds, 3),
            "case_file": self.case_file,
            "repro": self.repro,
        }


@dataclass
class Report:
    """The evaluation's outcome."""

    faults: list[FaultResult] = field(default_factory=list)
    false_alarms: list[FalseAlarm] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every fault found and no false alarm."""
        return all(f.found for f in self.faults) and not self.false_alarms

    def to_json(self) -> dict:
        """{"faults": [...], "false_alarms": [...]}."""
        return {"faults": [f.to_json() for f in self.faults], "false_alarms": [a.to_json() for a in self.false_alarms]}


# -- events -------------------------------------------------------------------------------------------------------


@dataclass
class RunStarted:
    """A fault's run (fault None: the fault-free run) begins."""

    fault: str | None
    budget_s: float


@dataclass
class Progress:
    """A run's figures so far."""

    fault: str | None
    seconds: float
    cases: int
    rejected: int


@dataclass
class FaultDone:
    """A fault's run ended."""

    result: FaultResult
    cases: int


@dataclass
class FalseAlarmSeen:
    """A false alarm turned up."""

    alarm: FalseAlarm


@dataclass
class CleanRunDone:
    """The fault-free run ended."""

    cases: int
    failing: int  # cases that failed (each a false alarm; several may share one signature)
    new_alarms: int  # signatures not seen before in this evaluation


Event = RunStarted | Progress | FaultDone | FalseAlarmSeen | CleanRunDone


@dataclass
class Config:
    """What to evaluate."""

    faults: Sequence[FaultInfo]
    targets: Sequence[str]
    driver: str = DEFAULT_DRIVER
    budget_s: float = DEFAULT_BUDGET_S
    timeout_s: float = DEFAULT_TIMEOUT_S
    out_dir: Path | None = None  # where failing cases are saved as case JSON (nothing saved when None)
    batch_s: float = BATCH_S


def _hunt(pool: WorkerPool, config: Config, fault: str | None, emit: Callable[[Event], None]) -> Hunt:
    """A hunt on one driver that reports its progress as events."""

    def progress(hunt: Hunt) -> None:
        emit(Progress(fault, hunt.spent, hunt.cases, hunt.rejected))

    return Hunt(pool, config.targets, config.budget_s, config.batch_s, progress)


def _save(config: Config, fault: str | None, failed: FailedCase) -> Path | None:
    if config.out_dir is None or failed.case is None:
        return None
    path = config.out_dir / f"{fault or 'fault-free'}-{failed.target}-{failed.verdict.signature}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    dump_case(failed.case, path)
    return path


def _alarm(config: Config, fault: str | None, failed: FailedCase, target_ref: str, seconds: float) -> FalseAlarm:
    v = failed.verdict
    path = _save(config, fault, failed)
    if path is None:
        return FalseAlarm(fault, failed.target, v.rule, v.title, v.signature, seconds)
    # A false alarm fails on the fault-free driver too: it replays without faults.
    repro = repro_command(path, target_ref, config.driver)
    return FalseAlarm(fault, failed.target, v.rule, v.title, v.signature, seconds, str(path), repro)


def evaluate(config: Config, emit: Callable[[Event], None] = lambda e: None) -> Report:
    """Hunt each fault, then run the fault-free driver; the report of what was found and what was a false alarm."""
    report = Report()
    refs = {resolve_target(ref).name: ref for ref in config.targets}
    seen_alarms: set[str] = set()

    def alarm(fault: str | None, failed: FailedCase, seconds: float) -> None:
        if failed.verdict.signature in seen_alarms:
            return
        seen_alarms.add(failed.verdict.signature)
        report.false_alarms.append(_alarm(config, fault, failed, refs[failed.target], seconds))
        emit(FalseAlarmSeen(report.false_alarms[-1]))

    with WorkerPool(config.driver, [], config.timeout_s) as clean:
        for fault in config.faults:
            emit(RunStarted(fault.name, config.budget_s))
            result = FaultResult(fault.name, fault.area)
            with WorkerPool(config.driver, [fault.name], config.timeout_s) as pool:
                hunt = _hunt(pool, config, fault.name, emit)
                while (failed := hunt.next_failure()) is not None:
                    # The fault is what made the case fail only if the fault-free driver passes it.
                    if passes_on(clean, refs[failed.target], failed):
                        _save(config, fault.name, failed)
                        result.found, result.seconds = True, hunt.spent
                        result.target, result.rule = failed.target, failed.verdict.rule
                        break
                    alarm(fault.name, failed, hunt.spent)
            report.faults.append(result)
            emit(FaultDone(result, hunt.cases))
        emit(RunStarted(None, config.budget_s))
        hunt = _hunt(clean, config, None, emit)
        alarms_before, failing = len(report.false_alarms), 0
        while (failed := hunt.next_failure()) is not None:
            failing += 1
            alarm(None, failed, hunt.spent)
        emit(CleanRunDone(hunt.cases, failing, len(report.false_alarms) - alarms_before))
    return report
