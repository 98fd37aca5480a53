"""A worker process never outlives the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# The middle process starts a grandchild that arms die_with_parent and then sleeps, like a worker stuck in a hang.
_MIDDLE = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1]])
print(child.pid, flush=True)
time.sleep(120)
"""
_STUCK_WORKER = """
import time
from harness.runner.worker import die_with_parent
print("armed" if die_with_parent() else "unarmed", flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has died; only its exit status waits for a reaper


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals are a Linux facility")
def test_a_stuck_worker_dies_when_its_parent_is_killed() -> None:
    middle = subprocess.Popen(
        [sys.executable, "-c", _MIDDLE, _STUCK_WORKER], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    try:
        assert middle.stdout is not None
        worker_pid = int(middle.stdout.readline())
        assert middle.stdout.readline().strip() == "armed"
        assert _alive(worker_pid)
        middle.send_signal(signal.SIGKILL)
        middle.wait(10)
        limit = time.monotonic() + 10
        while _alive(worker_pid) and time.monotonic() < limit:
            time.sleep(0.05)
        assert not _alive(worker_pid), "the worker outlived its parent"
    finally:
        middle.kill()
        middle.wait(10)
        if middle.stdout is not None:
            middle.stdout.close()
