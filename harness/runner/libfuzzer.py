"""Running one Atheris fuzz script as a libFuzzer process: the command line, its status lines, its findings.

The engine reports what it sees through a callback (a FuzzStats after every status line); printing is the
caller's business.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.drivers import DEFAULT_DRIVER

REPO_ROOT = Path(__file__).resolve().parents[2]
FUZZ_DIR = REPO_ROOT / "fuzz"
CORPUS_DIR = REPO_ROOT / "corpus"
DRIVER_ENV, FAULTS_ENV = "NNFUZZ_DRIVER", "NNFUZZ_FAULTS"
# libFuzzer's names for the files it writes when an input fails.
FINDING_PREFIXES = ("crash-", "timeout-", "oom-", "leak-")
_GRACE_S = 30.0  # beyond the budget before the process is stopped by force

# "#4096  pulse  cov: 512 ft: 1024 corp: 40/3Kb lim: 80 exec/s: 2048 rss: 96Mb"
_PLAIN = re.compile(r"^#(?P<execs>\d+)\s+(?P<event>[A-Za-z]+)\s+(?P<rest>.*)$")
# "#12345: cov: 100 ft: 200 corp: 30 exec/s 500 oom/timeout/crash: 0/0/1 time: 5s job: 2 dft_time: 0" (-fork)
_FORK = re.compile(
    r"^#(?P<execs>\d+): cov: (?P<cov>\d+) ft: (?P<ft>\d+) corp: (?P<corp>\d+) exec/s:? (?P<eps>\d+) "
    r"oom/timeout/crash: (?P<oom>\d+)/(?P<timeout>\d+)/(?P<crash>\d+)"
)
_WRITTEN = re.compile(r"Test unit written to (?P<path>\S+)")
_FINAL = re.compile(r"^stat::(?P<key>\w+):\s+(?P<value>\d+)")


class FuzzScriptMissing(FileNotFoundError):
    """No fuzz script for the target (harness misuse)."""


def fuzz_script(target: str) -> Path:
    """fuzz/fuzz_<target>.py; FuzzScriptMissing if there is none."""
    path = FUZZ_DIR / f"fuzz_{target}.py"
    if not path.is_file():
        known = sorted(p.stem.removeprefix("fuzz_") for p in FUZZ_DIR.glob("fuzz_*.py"))
        raise FuzzScriptMissing(f"no fuzz script for target {target!r} ({path}); known: {', '.join(known)}")
    return path


@dataclass
class FuzzStats:
    """What the fuzzer said about itself most recently."""

    execs: int = 0
    execs_per_second: int = 0
    coverage: int | None = None  # libFuzzer's cov: (edges and bytecode counters it has seen)
    features: int | None = None
    corpus: int | None = None  # inputs in the corpus
    findings: int = 0  # inputs written as crash/timeout/oom files so far
    event: str = ""  # INITED, NEW, REDUCE, pulse, DONE (plain mode) or FORK
    elapsed: float = 0.0

    def update(self, line: str) -> bool:
        """Take in one stderr line; True if it changed the figures."""
        if m := _PLAIN.match(line):
            self.execs, self.event = int(m["execs"]), m["event"]
            rest = m["rest"]
            for key, attr in (("cov", "coverage"), ("ft", "features"), ("exec/s", "execs_per_second")):
                if km := re.search(rf"(?:^|\s){re.escape(key)}: (\d+)", rest):
                    setattr(self, attr, int(km[1]))
            if km := re.search(r"(?:^|\s)corp: (\d+)/", rest):
                self.corpus = int(km[1])
            return True
        if m := _FORK.match(line):
            self.execs, self.event = int(m["execs"]), "FORK"
            self.coverage, self.features, self.corpus = int(m["cov"]), int(m["ft"]), int(m["corp"])
            self.execs_per_second = int(m["eps"])
            self.findings = max(self.findings, int(m["oom"]) + int(m["timeout"]) + int(m["crash"]))
            return True
        if _WRITTEN.search(line):
            self.findings += 1
            return True
        if m := _FINAL.match(line):
            if m["key"] == "number_of_executed_units":
                self.execs = max(self.execs, int(m["value"]))
            elif m["key"] == "average_exec_per_sec":
                self.execs_per_second = int(m["value"])
            return True
        return False


@dataclass
class FuzzConfig:
    """One fuzzing run."""

    target: str
    out_dir: Path
    budget_s: int = 60
    seed_corpus: Sequence[Path] = ()  # read-only corpora; new inputs go to out_dir/corpus
    driver: str = DEFAULT_DRIVER
    faults: Sequence[str] = ()
    jobs: int = 1
    keep_going: bool = False  # go on after a finding (always so with several jobs)
    timeout_s: int = 10  # per input, libFuzzer's -timeout
    extra_args: Sequence[str] = ()  # more libFuzzer flags
    script: Path | None = None  # default: fuzz/fuzz_<target>.py
    corpus: Path | None = None  # where new inputs go (default out_dir/corpus); read first, with the seed corpora

    @property
    def corpus_dir(self) -> Path:
        return self.corpus if self.corpus is not None else self.out_dir / "corpus"

    @property
    def findings_dir(self) -> Path:
        return self.out_dir / "findings"

    @property
    def log_path(self) -> Path:
        return self.out_dir / "fuzz.log"


@dataclass
class FuzzRun:
    """How a fuzzing run ended."""

    command: list[str]
    exit_code: int
    elapsed: float
    stats: FuzzStats
    findings: list[Path] = field(default_factory=list)
    interrupted: bool = False


def build_command(config: FuzzConfig) -> list[str]:
    """The fuzz script's command line."""
    command = [
        str(config.script or fuzz_script(config.target)),
        str(config.corpus_dir),
        *[str(p) for p in config.seed_corpus],
        f"-max_total_time={config.budget_s}",
        f"-artifact_prefix={config.findings_dir}/",
        f"-timeout={config.timeout_s}",
        "-print_final_stats=1",
    ]
    if config.jobs > 1 or config.keep_going:
        command += [f"-fork={config.jobs}", "-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
    return command + list(config.extra_args)


def fuzz_environment(driver: str, faults: Sequence[str]) -> dict[str, str]:
    """The environment a fuzz script reads its driver from; its `python3` is the one running the harness."""
    env = dict(os.environ)
    env[DRIVER_ENV] = driver
    env[FAULTS_ENV] = ",".join(faults)
    # -fork re-executes the script through its shebang: make `python3` resolve to this interpreter.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    # A driver or target named by a module spec may live in the working directory.
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.getcwd(), env.get("PYTHONPATH", "")] if p)
    return env


def finding_files(folder: Path) -> list[Path]:
    """The crash/timeout/oom/leak files libFuzzer wrote in a folder, oldest first."""
    if not folder.is_dir():
        return []
    files = [p for p in folder.iterdir() if p.is_file() and p.name.startswith(FINDING_PREFIXES)]
    return sorted(files, key=lambda p: (p.stat().st_mtime, p.name))


def run_fuzzer(config: FuzzConfig, on_stats: Callable[[FuzzStats], None] = lambda s: None) -> FuzzRun:
    """Run the fuzz script for its budget; on_stats is called after each status line and about once a second."""
    for folder in (config.corpus_dir, config.findings_dir):
        folder.mkdir(parents=True, exist_ok=True)
    command = build_command(config)
    env = fuzz_environment(config.driver, config.faults)
    stats = FuzzStats()
    start = time.monotonic()
    lock = threading.Lock()
    with open(config.log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, *command],
            stdout=log,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
            errors="replace",
            cwd=config.out_dir,
            start_new_session=True,  # its own process group: -fork children are stopped with it
        )

        def read() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                log.write(line)
                with lock:
                    changed = stats.update(line.rstrip("\n"))
                    stats.elapsed = time.monotonic() - start
                    if changed:
                        on_stats(stats)

        reader = threading.Thread(target=read, name="libfuzzer-stderr", daemon=True)
        reader.start()
        interrupted = False
        limit = start + config.budget_s + config.timeout_s + _GRACE_S
        try:
            while process.poll() is None:
                try:
                    process.wait(timeout=1.0)
                except subprocess.TimeoutExpired:
                    pass
                with lock:
                    stats.elapsed = time.monotonic() - start
                    on_stats(stats)
                if time.monotonic() > limit:
                    _signal_group(process, signal.SIGKILL)
        except KeyboardInterrupt:
            # libFuzzer stops on SIGINT after printing its final stats; give it the chance.
            interrupted = True
            _signal_group(process, signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait()
        finally:
            if process.poll() is None:
                _signal_group(process, signal.SIGKILL)
                process.wait()
        reader.join(5.0)
        if process.stderr is not None:
            process.stderr.close()
    elapsed = time.monotonic() - start
    stats.elapsed = elapsed
    return FuzzRun(command, process.returncode, elapsed, stats, finding_files(config.findings_dir), interrupted)


def _signal_group(process: subprocess.Popen, sig: signal.Signals) -> None:
    """Send a signal to the fuzzer's process group (the fuzzer and its -fork children)."""
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def summary_json(config: FuzzConfig, run: FuzzRun, findings: list[dict]) -> dict:
    """The run's summary as written to summary.json."""
    return {
        "target": config.target,
        "driver": config.driver,
        "faults": list(config.faults),
        "budget_seconds": config.budget_s,
        "jobs": config.jobs,
        "elapsed_seconds": round(run.elapsed, 3),
        "exit_code": run.exit_code,
        "interrupted": run.interrupted,
        "command": run.command,
        "stats": asdict(run.stats),
        "corpus_dir": str(config.corpus_dir),
        "findings": findings,
    }
