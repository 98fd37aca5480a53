"""The driver's IF and WHILE kernels, driven by a scripted subgraph runner."""

from __future__ import annotations

import time

import numpy as np
import pytest

from driver_under_test.backends.numpy.kernels import OpCall, Tensor, lookup
from driver_under_test.errors import DriverError
from harness.hal import ErrorStatus, OperandType, OperationType

F32, I32, BOOL8 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_INT32, OperandType.TENSOR_BOOL8


def tensor(operand_type, values, dtype):
    data = np.asarray(values, dtype=dtype)
    return Tensor(type=int(operand_type), shape=data.shape, data=data)


def subgraph(k):
    """A SUBGRAPH operand as the executor hands it over: data holds the referenced subgraph's index."""
    return Tensor(type=int(OperandType.SUBGRAPH), shape=(), data=np.array(k))


class ScriptedRunner:
    """Referenced subgraphs as Python functions of the input tensors; records every call."""

    def __init__(self, *subgraphs):
        self.subgraphs = subgraphs
        self.calls = []

    def __call__(self, k, inputs):
        self.calls.append((k, [t.data.copy() for t in inputs]))
        return self.subgraphs[k](inputs)


def call_with(op, inputs, outputs, runner, deadline=None):
    meta = [Tensor(type=int(t), shape=()) for t in outputs]
    call = OpCall(inputs=inputs, outputs=meta, run_subgraph=runner, loop_deadline_ns=deadline)
    return lookup(op).fn(call)


def doubled(inputs):
    return [tensor(F32, inputs[0].data * 2, np.float32)]


def negated(inputs):
    return [tensor(F32, -inputs[0].data, np.float32)]


@pytest.mark.parametrize(("condition", "expected", "branch"), [(True, [2.0, 4.0], 0), (False, [-1.0, -2.0], 1)])
def test_if_runs_the_selected_branch_on_the_remaining_inputs(condition, expected, branch):
    runner = ScriptedRunner(doubled, negated)
    x = tensor(F32, [1.0, 2.0], np.float32)
    cond = tensor(BOOL8, [condition], np.bool_)
    (out,) = call_with(OperationType.IF, [cond, subgraph(0), subgraph(1), x], [F32], runner)
    assert out.tolist() == expected
    assert [k for k, _ in runner.calls] == [branch]


def counting_loop():
    """condition: i < limit; body: (i + 1, total + step) with step input-only; m = 1, k = 1, n = 2."""

    def condition(inputs):
        i, _, limit, _ = (t.data for t in inputs)
        return [tensor(BOOL8, [int(i[0]) < int(limit[0])], np.bool_)]

    def body(inputs):
        i, total, _, step = (t.data for t in inputs)
        return [tensor(I32, i + 1, np.int32), tensor(I32, total + step, np.int32)]

    return ScriptedRunner(condition, body)


def loop_inputs(limit):
    values = ([0], [100], [limit], [7])
    return [subgraph(0), subgraph(1), *(tensor(I32, v, np.int32) for v in values)]


def test_while_iterates_until_the_condition_fails():
    runner = counting_loop()
    (out,) = call_with(OperationType.WHILE, loop_inputs(5), [I32], runner, time.monotonic_ns() + 10**9)
    assert out.tolist() == [5]
    # 6 condition evaluations and 5 bodies, alternating; input-only values never change
    assert [k for k, _ in runner.calls] == [0, 1] * 5 + [0]
    final_body_inputs = runner.calls[-2][1]
    assert [a.tolist() for a in final_body_inputs] == [[4], [128], [5], [7]]


def test_while_with_false_condition_returns_the_initial_values():
    runner = counting_loop()
    (out,) = call_with(OperationType.WHILE, loop_inputs(0), [I32], runner, time.monotonic_ns() + 10**9)
    assert out.tolist() == [0]
    assert len(runner.calls) == 1


def test_while_past_the_loop_deadline_misses_it_persistently():
    def forever(inputs):
        return [tensor(BOOL8, [True], np.bool_)]

    def identity(inputs):
        return [inputs[0]]

    runner = ScriptedRunner(forever, identity)
    inputs = [subgraph(0), subgraph(1), tensor(F32, [1.0], np.float32)]
    with pytest.raises(DriverError) as info:
        call_with(OperationType.WHILE, inputs, [F32], runner, time.monotonic_ns() + 20_000_000)
    assert info.value.status == ErrorStatus.MISSED_DEADLINE_PERSISTENT
    assert len(runner.calls) > 2
