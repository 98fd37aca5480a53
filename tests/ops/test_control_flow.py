"""IF and WHILE kernels with stand-in subgraphs: branch choice, the HAL's operand groups, the loop timeout."""

from __future__ import annotations

import time

import numpy as np
import pytest

from harness.hal import OperandType as T
from harness.hal import OperationType as Op
from harness.ops import LoopTimeoutError, get
from harness.ops.common import ExecutionError, signature_accepts
from tests.ops._build import out, run, subgraph, tensor, violations


class Subgraphs:
    """Stand-in for the executor's run_subgraph: Python functions indexed like Model.referenced."""

    def __init__(self, *graphs):
        self.graphs = graphs
        self.calls: list[int] = []

    def __call__(self, k: int, inputs: list[np.ndarray]) -> list[np.ndarray]:
        self.calls.append(k)
        return self.graphs[k](*inputs)


def plus_one(x):
    return [x + np.float32(1)]


def negate(x):
    return [-x]


@pytest.mark.parametrize(("condition", "expected", "branch"), [(True, [2.0, 3.0], 0), (False, [-1.0, -2.0], 1)])
def test_if_runs_the_branch_the_condition_selects(condition, expected, branch):
    graphs = Subgraphs(plus_one, negate)
    inputs = [tensor(T.TENSOR_BOOL8, [condition]), subgraph(0), subgraph(1), tensor(T.TENSOR_FLOAT32, [1.0, 2.0])]
    (result,) = run(Op.IF, inputs, [out(T.TENSOR_FLOAT32)], run_subgraph=graphs)
    assert result.tolist() == expected and graphs.calls == [branch]


def test_if_branch_references_follow_the_operand_location():
    graphs = Subgraphs(negate, negate, plus_one)
    inputs = [tensor(T.TENSOR_BOOL8, [True]), subgraph(2), subgraph(0), tensor(T.TENSOR_FLOAT32, [1.0])]
    assert run(Op.IF, inputs, [out(T.TENSOR_FLOAT32)], run_subgraph=graphs)[0].tolist() == [2.0]


def test_if_condition_must_hold_one_value():
    inputs = [tensor(T.TENSOR_BOOL8, [True, False]), subgraph(0), subgraph(1), tensor(T.TENSOR_FLOAT32, [1.0])]
    assert violations(Op.IF, inputs, [out(T.TENSOR_FLOAT32)])


def counting_condition(i, total, limit):
    return [np.array([i[0] < limit[0]])]


def counting_body(i, total, limit):
    # i is input-output, total is state-only, limit is input-only.
    return [i + 1, total + i]


def while_inputs(i, total, limit):
    return [
        subgraph(0),
        subgraph(1),
        tensor(T.TENSOR_INT32, [i]),
        tensor(T.TENSOR_INT32, [total]),
        tensor(T.TENSOR_INT32, [limit]),
    ]


def test_while_loops_until_the_condition_is_false():
    graphs = Subgraphs(counting_condition, counting_body)
    (result,) = run(Op.WHILE, while_inputs(0, 0, 5), [out(T.TENSOR_INT32)], run_subgraph=graphs)
    assert result.tolist() == [5]
    assert graphs.calls == [0, 1] * 5 + [0]


def test_while_with_a_false_condition_returns_the_initial_values():
    graphs = Subgraphs(counting_condition, counting_body)
    (result,) = run(Op.WHILE, while_inputs(9, 0, 5), [out(T.TENSOR_INT32)], run_subgraph=graphs)
    assert result.tolist() == [9] and graphs.calls == [0]


def test_while_state_only_operands_carry_between_iterations():
    # Two outputs: the counter and the running total (0 + 1 + 2 + 3).
    graphs = Subgraphs(counting_condition, counting_body)
    i, total = run(Op.WHILE, while_inputs(0, 0, 4), [out(T.TENSOR_INT32), out(T.TENSOR_INT32)], run_subgraph=graphs)
    assert i.tolist() == [4] and total.tolist() == [6]


def test_while_past_its_deadline_times_out():
    graphs = Subgraphs(lambda *args: [np.array([True])], lambda i, total, limit: [i, total])
    deadline = time.monotonic_ns() + 20_000_000
    with pytest.raises(LoopTimeoutError):
        run(Op.WHILE, while_inputs(0, 0, 1), [out(T.TENSOR_INT32)], run_subgraph=graphs, loop_deadline_ns=deadline)
    assert time.monotonic_ns() - deadline < 1_000_000_000


def test_while_body_with_too_few_outputs_fails():
    graphs = Subgraphs(counting_condition, lambda i, total, limit: [])
    with pytest.raises(ExecutionError):
        run(Op.WHILE, while_inputs(0, 0, 5), [out(T.TENSOR_INT32)], run_subgraph=graphs)


def test_if_signatures_take_the_condition_and_branches_alone_but_while_needs_a_loop_input():
    # types.hal: an IF's branch inputs may be none at all; a WHILE carries at least one value through the loop.
    (if_signature,) = get(Op.IF).signatures
    (while_signature,) = get(Op.WHILE).signatures
    f32 = T.TENSOR_FLOAT32
    assert signature_accepts(if_signature, [T.TENSOR_BOOL8, T.SUBGRAPH, T.SUBGRAPH], [f32])
    assert signature_accepts(if_signature, [T.TENSOR_BOOL8, T.SUBGRAPH, T.SUBGRAPH, f32, f32], [f32])
    assert not signature_accepts(if_signature, [T.TENSOR_BOOL8, T.SUBGRAPH], [f32])
    assert not signature_accepts(while_signature, [T.SUBGRAPH, T.SUBGRAPH], [f32])
    assert signature_accepts(while_signature, [T.SUBGRAPH, T.SUBGRAPH, f32], [f32])
