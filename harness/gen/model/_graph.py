"""The generator's working state: operands with their actual values, subgraphs under construction, and the
generation context (source, configuration, relaxed flag, referenced subgraphs).

Every operand carries its actual value: operations are executed with the reference kernels as they are added, so
later operations can reuse earlier results whose values suit them, and an operation whose kernel fails is
redrawn instead of ending up in the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.gen.model._config import ModelConfig
from harness.gen.source import Source
from harness.gen.sources import RandomSource, coin_threshold
from harness.hal import DataLocation, Operand, OperandLifeTime, OperandType, SymmPerChannelQuantParams
from harness.hal.sizes import SCALAR_TYPES
from harness.ops.parameters import Domain

L = OperandLifeTime
T = OperandType
# Enum members used in loops, as module constants (an attribute of an Enum class is several times slower).
_SUBGRAPH_INPUT = L.SUBGRAPH_INPUT

CONSTANT_LIFETIMES = frozenset({L.CONSTANT_COPY, L.CONSTANT_REFERENCE})
# What later operations may read besides results.
READABLE_LIFETIMES = CONSTANT_LIFETIMES | {L.SUBGRAPH_INPUT}
_TYPES = {int(t): t for t in T}
_min, _max = np.minimum.reduce, np.maximum.reduce
_INTS = {t: int(t) for t in T}  # the plain int of each member (int(member) is a call)
_LIFETIMES = {int(x): x for x in L}


class OpRejected(Exception):
    """This draw of an operation cannot be made valid (the operation slot is redrawn)."""


class GenOperand:
    """An operand being generated: its HAL description (declared dimensions) and its actual value.

    A new one is not yet committed to a subgraph (index -1).
    """

    __slots__ = (
        "op",
        "type",
        "value",
        "index",
        "produced",
        "consumers",
        "model_output",
        "absent",
        "parameter",
        "domain",
        "pool",
        "_extent",
    )

    def __init__(
        self,
        operand_type: int,
        dims: list[int],
        lifetime: int,
        value: np.ndarray | None,
        scale: float = 0.0,
        zero_point: int = 0,
        channel: SymmPerChannelQuantParams | None = None,
    ) -> None:
        t = _TYPES[operand_type]
        # Positional, in Operand's field order (type, dimensions, number_of_consumers, scale, zero_point, lifetime,
        # location, extra_params): generation creates a dozen operands per model and keywords cost a third of each.
        self.op = Operand(t, list(dims), 0, scale, zero_point, _LIFETIMES[lifetime], DataLocation(), channel)
        self.type = _INTS[t]  # the operand type as a plain int (a generated operand never changes type)
        self.value = value  # stored-form actual value; None for NO_VALUE and absent inputs
        self.index = -1  # position in its subgraph, set when committed
        self.produced = False  # written by an operation
        self.consumers = 0
        self.model_output = False
        self.absent = False  # a subgraph input fed no value at execution (optional positions only)
        self.parameter = False  # a model input standing for an operation parameter
        # The range of such a parameter when its execution may be given a value outside it (see ModelConfig).
        self.domain: Domain | None = None
        self._extent: tuple[float, float] | None = None
        self.pool = -1  # CONSTANT_REFERENCE: index of the model pool holding it

    @property
    def lifetime(self) -> int:
        """The operand lifetime."""
        return int(self.op.lifetime)

    @property
    def shape(self) -> tuple[int, ...]:
        """The actual shape (() for scalars and operands without a value)."""
        return () if self.value is None else tuple(self.value.shape)

    def extent(self) -> tuple[float, float]:
        """(min, max) of the stored value (cached: values never change once drawn)."""
        if self._extent is None:
            v = self.value
            if v is not None and v.size:
                # The reductions v.min() and v.max() dispatch to, without the dispatch.
                self._extent = (float(_min(v, axis=None)), float(_max(v, axis=None)))
            else:
                self._extent = (0.0, 0.0)
        return self._extent

    @property
    def is_tensor(self) -> bool:
        """True for tensor operand types."""
        return self.type not in SCALAR_TYPES

    def quant(self) -> tuple:
        """What must match for two operands to be interchangeable: type, scale, zero point, channel params."""
        extra = self.op.extra_params
        channel = (tuple(extra.scales), extra.channel_dim) if isinstance(extra, SymmPerChannelQuantParams) else None
        return (self.type, float(self.op.scale), int(self.op.zero_point), channel)

    def __repr__(self) -> str:
        return f"<GenOperand {T(self.type).name} {self.op.dimensions} {L(self.lifetime).name} #{self.index}>"


@dataclass
class Graph:
    """A subgraph under construction (main or referenced)."""

    main: bool
    operands: list[GenOperand] = field(default_factory=list)
    operations: list[tuple[int, list[int], list[int]]] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)  # SUBGRAPH_INPUT operands, in inputIndexes order
    outputs: list[int] = field(default_factory=list)  # fixed outputs (referenced subgraphs); main's are chosen later

    def commit(self, g: GenOperand) -> GenOperand:
        """Add an operand (once) and return it."""
        if g.index < 0:
            g.index = len(self.operands)
            self.operands.append(g)
            if g.op.lifetime == _SUBGRAPH_INPUT:
                self.inputs.append(g.index)
        return g

    def add_operation(self, op_type: int, inputs: list[GenOperand], outputs: list[GenOperand]) -> None:
        """Append an operation; its operands are committed and its outputs marked produced."""
        commit = self.commit
        ins = []
        for g in inputs:
            if g.index < 0:
                commit(g)
            ins.append(g.index)
            g.consumers += 1
        outs = []
        for g in outputs:
            if g.index < 0:
                commit(g)
            outs.append(g.index)
            g.produced = True
        self.operations.append((int(op_type), ins, outs))

    def values(self) -> list[GenOperand]:
        """Operands whose values later operations may read: inputs with a value, constants, results."""
        return [g for g in self.operands if g.value is not None and (g.produced or g.op.lifetime in READABLE_LIFETIMES)]


@dataclass
class Gen:
    """The state of one generate_model call."""

    src: Source
    cfg: ModelConfig
    relaxed: bool = False
    referenced: list[Graph] = field(default_factory=list)
    features: set[str] = field(default_factory=set)
    depth: int = 0  # 0 while building main, 1 inside a referenced subgraph
    # The largest tensor an operation may produce: the configuration's, raised to its vector_width_max_elements
    # once a vector-width size is drawn.
    max_elements: int = field(init=False)
    # The largest float result an operation may give: the configuration's, lowered to its judged_abs_value once an
    # extreme parameter or value is drawn.
    max_abs_value: float = field(init=False)
    # Parameters with a bounded range become model inputs now and then, one given a value outside its range.
    break_parameter: bool = False

    def __post_init__(self) -> None:
        self.max_elements = self.cfg.max_elements
        self.max_abs_value = self.cfg.max_abs_value
        # Bound once: chance() is called a few dozen times per model.
        self._integer = self.src.integer
        if type(self.src) is RandomSource:
            # Its chance() tosses this very coin in one call instead of two.
            self.chance = self.src.chance  # type: ignore[method-assign]

    def chance(self, p: float) -> bool:
        """A biased coin from the source (as harness.gen.source.chance)."""
        threshold = coin_threshold(p)
        if threshold.__class__ is bool:
            return threshold  # type: ignore[return-value]
        return self._integer(0, 999) >= threshold

    def judge_strictly(self) -> None:
        """An extreme was drawn: from now on float results must stay where the oracle judges them."""
        limit = self.cfg.judged_abs_value
        if limit < self.max_abs_value:
            self.max_abs_value = limit

    def allow_wide(self) -> None:
        """A vector-width size was drawn: from now on tensors may grow to the configuration's wide limit."""
        limit = self.cfg.vector_width_max_elements
        if limit > self.max_elements:
            self.max_elements = limit
