"""Run a command that dies with the campaign: `python _launch.py PARENT_PID PROGRAM ARG...`.

The launched process asks the kernel for SIGKILL when its parent goes away (PR_SET_PDEATHSIG), then becomes the
program (exec). A campaign killed with SIGKILL so leaves no fuzzer running on its own. Run by path, not as a
module: it imports nothing of the harness and starts in milliseconds.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main() -> None:
    """Ask to die with the parent, then become the program."""
    parent = int(sys.argv[1])
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the campaign still stops its processes itself when it ends normally
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
