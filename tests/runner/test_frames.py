"""Frames out of traceback texts, checked on hand-written tracebacks and dumps."""

from __future__ import annotations

from pathlib import Path

from harness.runner.frames import dump_frames, python_frames, relative_path, significant

# The texts name files under the real checkout, as tracebacks of this process would.
REPO = str(Path(__file__).resolve().parents[2])

PYTHON_TRACEBACK = f"""Traceback (most recent call last):
  File "{REPO}/harness/targets/validation.py", line 70, in run
    return guarded(self.name, lambda: self._judge(case, model, device))
  File "{REPO}/driver_under_test/device.py", line 120, in prepare_model
    self._check(model)
  File "{REPO}/driver_under_test/validation/operands.py", line 33, in _check
    raise IndexError("boom")
IndexError: boom
"""

DUMP_ONE_THREAD = f"""Fatal Python error: Aborted

Current thread 0x00007f0000000001 (most recent call first):
  File "{REPO}/driver_under_test/backends/numpy/kernels/conv.py", line 10 in conv2d
  File "{REPO}/driver_under_test/executor.py", line 50 in run
  File "/usr/lib/python3.11/threading.py", line 975 in run
"""

DUMP_TWO_THREADS = f"""Thread 0x00007f0000000002 (most recent call first):
  File "{REPO}/driver_under_test/burst.py", line 5 in serve
  File "/usr/lib/python3.11/threading.py", line 975 in run

Current thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3.11/multiprocessing/connection.py", line 400 in _recv
  File "{REPO}/harness/runner/worker.py", line 60 in serve
"""


def test_a_path_is_made_relative_to_its_import_root() -> None:
    assert relative_path("/repo/driver_under_test/device.py", ["/repo"]) == "driver_under_test/device.py"
    assert relative_path("/opt/py/lib/python3.11/threading.py", []) == "threading.py"


def test_python_traceback_frames_come_innermost_first() -> None:
    assert python_frames(PYTHON_TRACEBACK) == [
        "driver_under_test/validation/operands.py:_check",
        "driver_under_test/device.py:prepare_model",
        "harness/targets/validation.py:run",
    ]


def test_a_dump_gives_the_interrupted_threads_frames_without_standard_library_machinery() -> None:
    assert dump_frames(DUMP_ONE_THREAD)[-1] == "threading.py:run"
    assert significant(dump_frames(DUMP_ONE_THREAD)) == [
        "driver_under_test/backends/numpy/kernels/conv.py:conv2d",
        "driver_under_test/executor.py:run",
    ]


def test_a_waiting_current_thread_yields_to_the_thread_that_does_work() -> None:
    assert significant(dump_frames(DUMP_TWO_THREADS)) == ["driver_under_test/burst.py:serve"]
