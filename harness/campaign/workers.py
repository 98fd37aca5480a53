"""libFuzzer worker processes of a campaign: started without blocking, watched, stopped, killed with the campaign.

The command line, environment and status-line parsing are those of `nnfuzz fuzz` (harness.runner.libfuzzer);
what is added here is running several at once and tying each one's life to the campaign's (see _launch.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from harness.runner.libfuzzer import FuzzConfig, FuzzStats, build_command, fuzz_environment

LAUNCHER = Path(__file__).with_name("_launch.py")
# In fork mode a worker stops on a timeout rather than piling up timeout files: each costs a long replay to triage.
FORK_FLAGS = ("-ignore_timeouts=0",)


def launched(command: list[str]) -> list[str]:
    """`command` run through the launcher, so that it is killed when this process dies."""
    return [sys.executable, str(LAUNCHER), str(os.getpid()), *command]


class FuzzWorker:
    """One libFuzzer process fuzzing one target for a slice of the budget."""

    def __init__(self, config: FuzzConfig, log_path: Path, fork: bool = False) -> None:
        if fork:
            config = replace(config, keep_going=True, extra_args=[*config.extra_args, *FORK_FLAGS])
        self.config = config
        self.fork = fork
        self.log_path = log_path
        self.stats = FuzzStats()
        self.started = 0.0
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None
        self.stopping = False  # stopped by the campaign (Ctrl-C, the end of the budget)
        self.interrupted = False  # stopped at the end of its slice

    @property
    def target(self) -> str:
        """The target's name."""
        return self.config.target

    def start(self) -> None:
        """Start the process (call from the thread that lives as long as the campaign: the launcher ties to it)."""
        for folder in (self.config.corpus_dir, self.config.findings_dir, self.log_path.parent):
            folder.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, *build_command(self.config)]
        log = open(self.log_path, "w")  # noqa: SIM115 - closed by the reader thread
        self.started = time.monotonic()
        self._process = subprocess.Popen(
            launched(command),
            stdout=log,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=fuzz_environment(self.config.driver, self.config.faults),
            text=True,
            errors="replace",
            cwd=self.config.out_dir,
            start_new_session=True,  # Ctrl-C reaches the campaign only; it stops its workers itself
        )
        self._reader = threading.Thread(target=self._read, args=(log,), name=f"fuzz-{self.target}", daemon=True)
        self._reader.start()

    def _read(self, log) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        try:
            for line in process.stderr:
                log.write(line)
                with self._lock:
                    self.stats.update(line.rstrip("\n"))
        finally:
            log.close()

    @property
    def pid(self) -> int | None:
        """The process id (None before start)."""
        return self._process.pid if self._process else None

    @property
    def elapsed(self) -> float:
        """Seconds since start."""
        return time.monotonic() - self.started if self.started else 0.0

    def snapshot(self) -> FuzzStats:
        """A copy of the figures so far."""
        with self._lock:
            return replace(self.stats)

    def poll(self) -> int | None:
        """The exit code, or None while running."""
        return self._process.poll() if self._process else None

    def overdue(self) -> bool:
        """True when the process has run well past its slice (it should have stopped by itself)."""
        return self.elapsed > self.config.budget_s + self.config.timeout_s + 60

    def interrupt(self) -> None:
        """Ask libFuzzer to stop now (its time is up); poll() says when it has."""
        self.interrupted = True
        if self._process is not None and self._process.poll() is None:
            self._signal(signal.SIGINT)

    def stop(self, wait_s: float = 10.0) -> int | None:
        """Ask libFuzzer to stop (SIGINT: it prints its final figures), then kill it if it does not."""
        self.stopping = True
        if self._process is None:
            return None
        if self._process.poll() is None:
            self._signal(signal.SIGINT)
            try:
                self._process.wait(wait_s)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self._process.wait()
        self.finish()
        return self._process.returncode

    def kill(self) -> None:
        """Stop at once."""
        if self._process is not None and self._process.poll() is None:
            self._signal(signal.SIGKILL)
            self._process.wait()
        self.finish()

    def finish(self) -> None:
        """Wait for the output to be read to its end (after the process ended)."""
        if self._reader is not None:
            self._reader.join(5.0)
        if self._process is not None:
            if self.fork:
                # -fork children share the process group and may outlive their parent: stop them with it.
                self._signal(signal.SIGKILL)
            if self._process.stderr is not None:
                self._process.stderr.close()

    def _signal(self, sig: signal.Signals) -> None:
        assert self._process is not None
        try:
            os.killpg(self._process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
