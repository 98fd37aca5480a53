"""The values a scalar parameter of an operation may take: one table serves the validator (constants), the
kernels (values given at run time) and the generators (values drawn outside on purpose).

types.hal defines strides and dilation factors as positive, explicit paddings as non-negative, the implicit
padding scheme as a PaddingCode (SAME 1, VALID 2; 0 is taken as VALID, as the reference and drivers have always
done) and the fused activation as a FusedActivationFunc (NONE 0, RELU 1, RELU1 2, RELU6 3); the block sizes of
SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND as at least 1. A model whose constant breaks one of these is invalid; a
value given at run time that breaks one is an invalid input argument, which IPreparedModel answers with
INVALID_ARGUMENT. So is BIDIRECTIONAL_SEQUENCE_LSTM's merge_outputs given false at run time to an operation that
declares no backward output.

A batch index (ROI_ALIGN, ROI_POOLING, AXIS_ALIGNED_BBOX_TRANSFORM) names one of the batches of another input, so
it lies in [0, batches): the reference fails an execution given one outside (harness.ops.detection), with no status
named by the HAL, and the generators draw such run-time values too (`batch_index_domain`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.hal import OperationType
from harness.ops.common import InvalidParameter
from harness.ops.registry import get

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True)
class Domain:
    """The values one parameter (or each element of a tensor one) may take: at least `at_least` (and below
    `below` when given), or one of `one_of`."""

    what: str
    at_least: int | None = None
    one_of: tuple[int, ...] | None = None
    below: int | None = None  # exclusive upper bound, with at_least
    boolean: bool = False  # a BOOL parameter: the only value outside is the other truth value

    def holds(self, value: object) -> bool:
        """True when `value` lies in the domain."""
        v = int(value)  # type: ignore[call-overload]
        if self.one_of is not None:
            return v in self.one_of
        return (self.at_least is None or v >= self.at_least) and (self.below is None or v < self.below)

    def outside(self) -> tuple[int, ...]:
        """Values outside the domain a generator draws from: just outside, further, and at the int32 extremes."""
        if self.boolean:
            return tuple(v for v in (0, 1) if v not in (self.one_of or ()))
        if self.one_of is not None:
            lo, hi = min(self.one_of), max(self.one_of)
            return (lo - 1, hi + 1, hi + 7, INT32_MIN, INT32_MAX)
        assert self.at_least is not None
        low = tuple(v for v in (self.at_least - 1, self.at_least - 2, -7, INT32_MIN) if v < self.at_least)
        return low if self.below is None else (*low, self.below, self.below + 1, INT32_MAX)

    def just_outside(self) -> int:
        """The value outside the domain next to its bound (0 for a positive parameter, -1 for a non-negative one)."""
        if self.boolean:
            return self.outside()[0]
        if self.one_of is not None:
            return max(self.one_of) + 1
        assert self.at_least is not None
        return self.at_least - 1

    def describe(self) -> str:
        """The domain in words, for messages."""
        if self.boolean:
            return self.what
        if self.one_of is not None:
            return f"one of {list(self.one_of)}"
        return f">= {self.at_least}" + ("" if self.below is None else f" and < {self.below}")


_POSITIVE = Domain("positive", at_least=1)
_NON_NEGATIVE = Domain("non-negative", at_least=0)
# Parameter name (the catalogue's Arg name) -> its domain, for the windowed operations.
WINDOW_DOMAINS: Mapping[str, Domain] = {
    "stride_w": _POSITIVE,
    "stride_h": _POSITIVE,
    "dilation_w": _POSITIVE,
    "dilation_h": _POSITIVE,
    "pad_left": _NON_NEGATIVE,
    "pad_right": _NON_NEGATIVE,
    "pad_top": _NON_NEGATIVE,
    "pad_bottom": _NON_NEGATIVE,
    "padding_scheme": Domain("padding code", one_of=(0, 1, 2)),
    "activation": Domain("fused activation", one_of=(0, 1, 2, 3)),
}

# types.hal: the block sizes of SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND "must be >= 1" (a domain per element of
# the block shape tensor).
BLOCK_DOMAINS: Mapping[str, Domain] = {"block_shape": _POSITIVE}

# types.hal: BIDIRECTIONAL_SEQUENCE_LSTM's output 1 is the backward output, "unused if merge_outputs is true". An
# operation that declares no backward output needs merge_outputs true (a run-time false leaves a required output
# undeclared); the domain depends on the operation's outputs, so the recipe names it rather than this table.
MERGED_OUTPUTS = Domain("true when no backward output is declared", one_of=(1,), boolean=True)

_O = OperationType
# Operation -> parameter name -> domain: the parameters whose range is checked for constants and at run time (a
# domain of a tensor parameter holds for each of its elements).
PARAMETER_DOMAINS: Mapping[int, Mapping[str, Domain]] = {
    **{
        int(op): WINDOW_DOMAINS
        for op in (
            _O.CONV_2D,
            _O.DEPTHWISE_CONV_2D,
            _O.GROUPED_CONV_2D,
            _O.TRANSPOSE_CONV_2D,
            _O.AVERAGE_POOL_2D,
            _O.MAX_POOL_2D,
            _O.L2_POOL_2D,
        )
    },
    int(_O.SPACE_TO_BATCH_ND): BLOCK_DOMAINS,
    int(_O.BATCH_TO_SPACE_ND): BLOCK_DOMAINS,
}


# Operation -> position of its batch-index input (TENSOR_INT32 [num_rois]).
BATCH_INDEX_INPUTS: Mapping[int, int] = {
    int(_O.ROI_ALIGN): 2,
    int(_O.ROI_POOLING): 2,
    int(_O.AXIS_ALIGNED_BBOX_TRANSFORM): 2,
}


def batch_index_domain(batches: int) -> Domain:
    """The values a batch index into `batches` batches may take."""
    return Domain("batch index", at_least=0, below=batches)


def domain_of(op_type: int, name: str) -> Domain | None:
    """The domain of parameter `name` of an operation, or None when its range is not one of the checked ones."""
    return PARAMETER_DOMAINS.get(int(op_type), {}).get(name)


def domain_problems(domains: Mapping[str, Domain], named_values: Iterable[tuple[str, object]]) -> list[str]:
    """One message per (name, value) whose value is known (not None) and outside its domain in `domains`."""
    problems = []
    for name, value in named_values:
        domain = domains.get(name)
        if domain is not None and value is not None and not domain.holds(value):
            problems.append(f"{name} must be {domain.describe()}, got {int(value)}")  # type: ignore[call-overload]
    return problems


def refuse_outside(domains: Mapping[str, Domain], named_values: Iterable[tuple[str, object]]) -> None:
    """Raise InvalidParameter when a parameter value given to a kernel lies outside its domain."""
    problems = domain_problems(domains, named_values)
    if problems:
        raise InvalidParameter("; ".join(problems))


def bounded_positions(op_type: int, input_types: Sequence[int]) -> list[tuple[int, str, Domain]]:
    """(input position, parameter name, domain) of the bounded parameters of an operation whose inputs have these
    types, read off the first catalogue signature that fits them (none when no signature fits)."""
    domains = PARAMETER_DOMAINS.get(int(op_type))
    spec = get(int(op_type))
    if domains is None or spec is None:
        return []
    n = len(input_types)
    for sig in spec.signatures:
        args = sig.inputs
        if any(a.repeated for a in args) or not sig.required_inputs <= n <= len(args):
            continue
        if all(int(t) in a.types for t, a in zip(input_types, args)):
            return [(i, a.name, domains[a.name]) for i, a in enumerate(args[:n]) if a.name in domains]
    return []
