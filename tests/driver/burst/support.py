"""Helpers for the burst tests: counting the driver's handles on a memory, and a burst on a fresh prepared model."""

from __future__ import annotations

import os

from harness.hal.memory import Memory


def open_handles(memory: Memory) -> int:
    """How many fds of this process refer to the memory's file (the client's, its mappings', the driver's)."""
    target = os.fstat(memory.fd)
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.stat(f"/proc/self/fd/{name}")
        except OSError:
            continue
        count += (st.st_ino, st.st_dev) == (target.st_ino, target.st_dev)
    return count
