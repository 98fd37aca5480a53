"""Semantic mutants of the driver as a self-evaluation of the harness: small changes drawn with a seed from the
driver package's source (operators, sample) or replayed from a recorded run (replay), written into isolated copies
and hunted with the targets (run)."""

from harness.mutants.operators import OPERATOR_NAMES, OPERATORS, Edit, Operator, apply, edits
from harness.mutants.replay import Found, Gone, Recorded, Replay, ReplayError, read_recorded, replay_file
from harness.mutants.run import (
    ERROR,
    KILLED,
    KILLED_AT_START,
    SURVIVED,
    Config,
    MutantDone,
    MutantProgress,
    MutantResult,
    MutantStarted,
    run_mutant,
    run_mutants,
    summary,
)
from harness.mutants.sample import (
    DEFAULT_EXCLUDE,
    Mutant,
    SampleError,
    fingerprint,
    package_files,
    package_root,
    sample,
)
