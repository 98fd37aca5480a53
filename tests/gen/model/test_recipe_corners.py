"""Corners a recipe draws now and then because a smooth draw never reaches them: LSH_PROJECTION weights so small
that weighted sums of fingerprints land within (-1, 1), and HEATMAP_MAX_KEYPOINT peaks whose quadratic fit lies
past the HAL's 1.5-cell limit on the sub-pixel offset. Each is drawn, the models stay valid and run on the
reference, and an implementation that gets the corner wrong gives other outputs."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from harness.gen import ModelConfig
from harness.hal import OperandType, OperationType
from harness.hal.values import constant_value
from harness.ops import convolution, hashing
from harness.ops._nn_util import implicit_padding
from harness.ops.common import to_real
from harness.reference import run_model, validate_model
from tests.gen.model.generated import generated, reference_failures

O = OperationType
# The HAL's reference: a fit's offset longer than this (in cells, along either axis) is scaled back to it.
MAX_OFFSET = 1.5


def _models(op: int, seeds: range) -> list:
    config = ModelConfig(operations=frozenset({op}), max_operations=1, control_flow=False)
    return list(generated(seeds, config))


def _value(g, k: int) -> np.ndarray | None:
    """The value of operand k of main when the model gives it (an input or a readable constant), else None."""
    main = g.model.main
    if k in main.input_indexes:
        return g.inputs[main.input_indexes.index(k)]
    return constant_value(g.model, main, k)


# --------------------------------------------------------------------------------------------------- LSH weights


def _scores(g) -> list[float]:
    """Every weighted sum the model's LSH_PROJECTION takes the sign of (when the model gives its inputs)."""
    main = g.model.main
    out = []
    for op in main.operations:
        seeds, data, weights = (_value(g, k) for k in op.inputs[:3])
        if seeds is None or data is None or weights is None:
            continue
        x = np.ascontiguousarray(data)
        rows = [x[k].tobytes() for k in range(x.shape[0])]
        for seed in np.asarray(seeds, dtype=np.float32).reshape(-1):
            key = struct.pack("<f", float(seed))
            out.append(sum(float(w) * hashing.signed64(hashing.fingerprint64(key + r)) for w, r in zip(weights, rows)))
    return out


def test_lsh_sums_within_the_unit_interval_are_drawn() -> None:
    scores = [s for seed, g in _models(O.LSH_PROJECTION, range(300)) for s in _scores(g)]
    assert sum(0.0 < s <= 1.0 for s in scores) >= 5
    assert sum(s == 0.0 for s in scores) >= 5


def _sign_against_one(rows: list[bytes], weights: np.ndarray | None, seed: float) -> int:
    """A projected bit with the wrong threshold: 1 when the weighted sum exceeds 1 rather than 0."""
    key = struct.pack("<f", seed)
    values = [hashing.signed64(hashing.fingerprint64(key + r)) for r in rows]
    score = sum(values) if weights is None else sum(float(w) * v for w, v in zip(weights, values))
    return 1 if score > 1 else 0


def test_a_sign_taken_against_one_changes_drawn_outputs(monkeypatch) -> None:
    models = _models(O.LSH_PROJECTION, range(300))
    monkeypatch.setattr(hashing, "running_sign_bit", _sign_against_one)
    changed = [
        seed
        for seed, g in models
        if not all(np.array_equal(a, b) for a, b in zip(run_model(g.model, g.inputs).outputs, g.outputs))
    ]
    assert changed


# ------------------------------------------------------------------------------------------- heatmap keypoints


def _fit_offset(grid: np.ndarray) -> tuple[float, float]:
    """The unlimited offset of the maximum of the quadratic fitted to a 3x3 neighbourhood (0 when it is flat)."""
    b = np.array([grid[1, 0] - grid[1, 2], grid[0, 1] - grid[2, 1]]) / 2.0
    dxx = grid[1, 0] - 2.0 * grid[1, 1] + grid[1, 2]
    dyy = grid[0, 1] - 2.0 * grid[1, 1] + grid[2, 1]
    dxy = (grid[0, 0] - grid[0, 2] - grid[2, 0] + grid[2, 2]) / 4.0
    det = dxx * dyy - dxy * dxy
    if abs(det) < 1e-3 + 1e-3 * dxx * dyy:
        return 0.0, 0.0
    return (dyy * b[0] - dxy * b[1]) / det, (dxx * b[1] - dxy * b[0]) / det


def _far_fits(g) -> list[tuple[float, float, float]]:
    """Per heatmap the model gives whose peak is inside it and fits a maximum past the limit: the offset of the
    keypoint the reference placed, in cells from the peak's centre, and how far the output's rounding may move it."""
    main = g.model.main
    result = run_model(g.model, g.inputs)
    found = []
    for op in main.operations:
        heat, boxes, nchw = (_value(g, k) for k in op.inputs[:3])
        if heat is None or boxes is None:
            continue
        heat = to_real(np.asarray(heat), main.operands[op.inputs[0]])
        boxes = to_real(np.asarray(boxes), main.operands[op.inputs[1]])
        if nchw is not None and bool(nchw):
            heat = heat.transpose(0, 2, 3, 1)
        if op.outputs[1] not in main.output_indexes:
            continue
        kind = main.operands[op.outputs[1]]
        points = to_real(result.outputs[main.output_indexes.index(op.outputs[1])], kind)
        size = heat.shape[1]
        for b in range(heat.shape[0]):
            for k in range(heat.shape[3]):
                plane = heat[b, :, :, k]
                row, col = divmod(int(np.argmax(plane)), size)
                if not (0 < row < size - 1 and 0 < col < size - 1):
                    continue
                if max(abs(v) for v in _fit_offset(plane[row - 1 : row + 2, col - 1 : col + 2])) <= 2.0:
                    continue
                x1, y1, x2, y2 = boxes[b]
                dx = (points[b, k, 0] - x1) / (x2 - x1) * size - col - 0.5
                dy = (points[b, k, 1] - y1) / (y2 - y1) * size - row - 0.5
                # Quantized keypoints are rounded to half their step: that much of a cell either way.
                found.append((dx, dy, kind.scale / 2 * size / min(x2 - x1, y2 - y1)))
    return found


@pytest.fixture(scope="module")
def heatmaps() -> list:
    """HEATMAP_MAX_KEYPOINT models of a fixed range of seeds."""
    return _models(O.HEATMAP_MAX_KEYPOINT, range(200))


def test_heatmap_peaks_fitting_past_the_offset_limit_are_drawn(heatmaps) -> None:
    assert sum(1 for _, g in heatmaps if _far_fits(g)) >= 10
    assert all(validate_model(g.model) == [] and reference_failures(seed, g) == [] for seed, g in heatmaps)


def test_far_fits_put_keypoints_at_the_offset_limit(heatmaps) -> None:
    # The keypoint lies exactly 1.5 cells off along the fit's longer axis: an implementation that limits the
    # offset otherwise (or not at all) places it half a cell or more away.
    offsets = [o for _, g in heatmaps for o in _far_fits(g)]
    assert offsets
    assert all(abs(max(abs(dx), abs(dy)) - MAX_OFFSET) <= 1e-3 + slack for dx, dy, slack in offsets), offsets


# ------------------------------------------------------------------------------------ transposed convolutions


@pytest.fixture(scope="module")
def transposed() -> list:
    """TRANSPOSE_CONV_2D models of a fixed range of seeds."""
    return _models(O.TRANSPOSE_CONV_2D, range(300))


def _same_over_an_undivided_input(g) -> int:
    """The stride with which the model's TRANSPOSE_CONV_2D takes SAME implicitly over an input that stride does
    not divide, with a filter wider than 1 (where SAME's crop differs from a forward convolution's); 0 if none."""
    main = g.model.main
    for op in main.operations:
        if main.operands[op.inputs[3]].type != OperandType.TENSOR_INT32:  # the explicit form
            continue
        scheme, stride_w, stride_h = (_value(g, k) for k in op.inputs[4:7])
        nchw = len(op.inputs) > 8 and bool(_value(g, op.inputs[8]))
        dims, filt = main.operands[op.inputs[0]].dimensions, main.operands[op.inputs[1]].dimensions
        h, w = (dims[2], dims[3]) if nchw else (dims[1], dims[2])
        if scheme is None or int(scheme) != 1 or stride_w is None or stride_h is None:
            continue
        for size, stride, k in ((h, int(stride_h), filt[1]), (w, int(stride_w), filt[2])):
            if stride > 1 and size % stride and k > 1:
                return stride
    return 0


def test_transposed_same_over_inputs_the_stride_does_not_divide_is_drawn(transposed) -> None:
    strides = [_same_over_an_undivided_input(g) for _, g in transposed]
    assert strides.count(2) >= 5 and strides.count(3) >= 5


def test_a_forward_convolution_padding_changes_drawn_transposed_outputs(transposed, monkeypatch) -> None:
    # The padding a forward convolution would take over the input instead of the output: SAME's crop goes wrong.
    monkeypatch.setattr(
        convolution,
        "implicit_padding",
        lambda size, stride, k, d, scheme: implicit_padding(
            size // stride if scheme == 1 else size, stride, k, d, scheme
        ),
    )
    changed = [
        seed
        for seed, g in transposed
        if _same_over_an_undivided_input(g)
        and not all(np.array_equal(a, b) for a, b in zip(run_model(g.model, g.inputs).outputs, g.outputs))
    ]
    assert len(changed) >= 5
