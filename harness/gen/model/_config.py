"""ModelConfig: the knobs of the model generator (sizes, operation set, how often each feature appears)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from harness.hal.memory import MemoryKind


@dataclass(frozen=True)
class ModelConfig:
    """What generate_model may produce. Probabilities are per decision (per operand, per operation slot...)."""

    max_operations: int = 3  # operations of main (an IF or WHILE counts as one)
    max_dim: int = 4  # largest drawn dimension
    max_rank: int = 4  # largest drawn rank (operations accepting "rank >= 1" are capped here)
    max_elements: int = 256  # largest tensor an operation may produce (larger draws are retried)
    # Operation types to draw from (None = every catalogued operation with a reference kernel). Operations without
    # a kernel are never drawn: each operation is executed while it is drawn.
    operations: frozenset[int] | None = None
    control_flow: bool = True  # IF/WHILE with referenced subgraphs
    control_flow_probability: float = 0.12  # per operation slot
    subgraph_max_operations: int = 2  # operations of each referenced subgraph
    relaxed_probability: float = 0.15  # relaxComputationFloat32toFloat16
    unknown_dims_probability: float = 0.15  # an operation output (temporary or model output) declares 0 dimensions
    unknown_input_dims_probability: float = 0.05  # a model input declares 0 dimensions (the request gives them)
    constant_probability: float = 0.3  # a new data tensor is a constant rather than a model input
    reference_probability: float = 0.35  # a constant is CONSTANT_REFERENCE (in a pool) rather than CONSTANT_COPY
    reuse_probability: float = 0.6  # a data input reuses an earlier value when one fits
    omit_optional_probability: float = 0.5  # an optional input gets no value
    absent_input_probability: float = 0.1  # an omitted optional input is a model input given no value at execution
    param_input_probability: float = 0.03  # a parameter that need not be constant is a model input
    extra_output_probability: float = 0.2  # a consumed result is also a model output
    permute_io_probability: float = 0.2  # inputIndexes/outputIndexes not in operand order
    max_abs_value: float = 1e4  # float results beyond this (or not finite) make the operation be redrawn
    max_attempts: int = 4  # draws per operation slot before giving up on it
    model_pool_kinds: tuple[str, ...] = (MemoryKind.ASHMEM.value, MemoryKind.MMAP_FD.value)
    quantized_bias: float = 0.0  # probability of preferring a quantized typing (0 = uniform over signatures)

    def with_operations(self, operations: Iterable[int]) -> ModelConfig:
        """A copy restricted to these operation types."""
        return replace(self, operations=frozenset(int(o) for o in operations))
