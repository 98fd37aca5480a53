"""Window extraction: the im2col lowering that turns convolutions into matrix multiplies, and its inverse."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from driver_under_test.backends.numpy.kernels._conv_common import PATCH_BLOCK_ELEMENTS, Geometry, guard_elements


def pad_nhwc(x: np.ndarray, g: Geometry, value: float | int) -> np.ndarray:
    """Copy of an NHWC tensor surrounded by the geometry's padding, filled with `value`."""
    n, h, w, c = x.shape
    guard_elements((n, h + g.pad_top + g.pad_bottom, w + g.pad_left + g.pad_right, c), "padded input")
    padded = np.full((n, h + g.pad_top + g.pad_bottom, w + g.pad_left + g.pad_right, c), value, dtype=x.dtype)
    padded[:, g.pad_top : g.pad_top + h, g.pad_left : g.pad_left + w, :] = x
    return padded


def windows(x: np.ndarray, g: Geometry, pad_value: float | int) -> np.ndarray:
    """Read-only [N, OH, OW, KH, KW, C] view of every window of an NHWC tensor."""
    padded = pad_nhwc(x, g, pad_value)
    n, _, _, c = padded.shape
    sn, sh, sw, sc = padded.strides
    return as_strided(
        padded,
        shape=(n, g.out_h, g.out_w, g.kernel_h, g.kernel_w, c),
        strides=(sn, sh * g.stride_h, sw * g.stride_w, sh * g.dilation_h, sw * g.dilation_w, sc),
        writeable=False,
    )


def im2col(x: np.ndarray, g: Geometry, pad_value: float | int) -> np.ndarray:
    """[N*OH*OW, KH*KW*C] patch matrix, rows in output raster order, columns in (kh, kw, c) filter order."""
    n, _, _, c = x.shape
    return windows(x, g, pad_value).reshape(n * g.out_h * g.out_w, g.kernel_h * g.kernel_w * c)


def row_blocks(g: Geometry, n: int, columns: int) -> list[tuple[int, int]]:
    """[start, stop) ranges of output rows whose patches (n * rows * out_w * columns) fit one block."""
    per_row = max(1, n * g.out_w * columns)
    rows = max(1, PATCH_BLOCK_ELEMENTS // per_row)
    return [(r, min(r + rows, g.out_h)) for r in range(0, g.out_h, rows)]


def col2im(cols: np.ndarray, n: int, out_h: int, out_w: int, in_h: int, in_w: int, kernel_h: int, kernel_w: int,
           stride_h: int, stride_w: int, pad_top: int, pad_left: int) -> np.ndarray:
    """Scatter-add [N, IH, IW, KH, KW, C] contributions onto an [N, OH, OW, C] output (transposed convolution).

    Input pixel (i, j) contributes its (kh, kw) tap to output pixel (i*stride_h + kh - pad_top,
    j*stride_w + kw - pad_left); taps falling outside the output are dropped.
    """
    c = cols.shape[-1]
    full_h = (in_h - 1) * stride_h + kernel_h
    full_w = (in_w - 1) * stride_w + kernel_w
    canvas = np.zeros((n, max(full_h, pad_top + out_h), max(full_w, pad_left + out_w), c), dtype=cols.dtype)
    for kh in range(kernel_h):
        for kw in range(kernel_w):
            canvas[:, kh : kh + (in_h - 1) * stride_h + 1 : stride_h,
                   kw : kw + (in_w - 1) * stride_w + 1 : stride_w, :] += cols[:, :, :, kh, kw, :]
    return canvas[:, pad_top : pad_top + out_h, pad_left : pad_left + out_w, :]
