"""The validator's quick acceptance test of a signature agrees with the detailed attempt that names mismatches."""

from __future__ import annotations

import harness.ops
from harness.case import close_model_pools, model_from_json
from harness.hal import Operand, OperationType
from harness.hal import OperandLifeTime as L
from harness.hal import OperandType as T
from harness.reference._signature import _accepts, _attempt, _position_fits, _position_problems
from harness.runner.execute import decode_seed, resolve_target


def test_position_fits_exactly_when_there_is_no_problem() -> None:
    args = {arg for spec in harness.ops.all_specs() for sig in spec.signatures for arg in (*sig.inputs, *sig.outputs)}
    operands = [
        Operand(t, dims, lifetime=lifetime)
        for t in (T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM, T.INT32, T.TENSOR_INT32, T.BOOL, 999)
        for dims in ([], [2], [1, 2, 3, 4], [1, 1, 1, 1, 1])
        for lifetime in L
    ]
    for arg in args:
        for operand in operands:
            for is_input in (True, False):
                fits = _position_fits(operand, arg, is_input=is_input)
                assert fits == (not _position_problems(operand, arg, is_input=is_input)), (operand, arg, is_input)


def test_accepts_exactly_when_the_attempt_finds_no_problem() -> None:
    compared = rejected = 0
    for target in ("validation", "execution"):
        for seed in range(250):
            case = decode_seed(resolve_target(target), seed)
            if case is None:
                continue
            model = model_from_json(case.model)
            try:
                for subgraph in (model.main, *model.referenced):
                    count = len(subgraph.operands)
                    for operation in subgraph.operations:
                        if not all(0 <= k < count for k in (*operation.inputs, *operation.outputs)):
                            continue
                        if operation.type not in set(OperationType):
                            continue
                        spec = harness.ops.get(operation.type)
                        for signature in spec.signatures if spec is not None else []:
                            try:
                                accepted = not _attempt(model, subgraph, operation, signature).problems
                            except (ValueError, TypeError, IndexError, KeyError):
                                continue  # a check that cannot read malformed operands: not this test's subject
                            assert _accepts(model, subgraph, operation, signature) == accepted, (target, seed)
                            compared += 1
                            rejected += not accepted
            finally:
                close_model_pools(model)
    assert compared > 1000 and rejected > 500
