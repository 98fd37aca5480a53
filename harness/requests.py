"""Building execution requests from numpy arrays on real shared memory, and reading the outputs back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from harness.hal import DataLocation, Model, Request, RequestArgument, element_size, numpy_dtype
from harness.hal.memory import Memory, create_ashmem, create_hardware_buffer_blob, create_mmap_fd

MEMORY_FACTORIES: dict[str, Callable[[int], Memory]] = {
    "ashmem": create_ashmem,
    "mmap_fd": create_mmap_fd,
    "hardware_buffer_blob": create_hardware_buffer_blob,
}
_ALIGN = 8


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


@dataclass
class RequestBuffers:
    """A request whose inputs sit in one pool and outputs in another, with the arrays' dtypes remembered."""

    request: Request
    memories: list[Memory]
    output_dtypes: list[np.dtype]
    input_dims: list[list[int]] = field(default_factory=list)

    def read_output(self, i: int, dimensions: Sequence[int]) -> np.ndarray:
        """Output i as an array of the given (actual) dimensions."""
        arg = self.request.outputs[i]
        dtype = self.output_dtypes[i]
        count = int(np.prod(dimensions)) if len(dimensions) else 1
        raw = self.memories[arg.location.pool_index].read(arg.location.offset, count * dtype.itemsize)
        return np.frombuffer(raw, dtype=dtype).reshape(tuple(dimensions)).copy()

    def close(self) -> None:
        """Close every pool."""
        for m in self.memories:
            m.close()

    def __enter__(self) -> RequestBuffers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_request(
    model: Model,
    inputs: Sequence[np.ndarray | None],
    output_sizes: Sequence[int],
    *,
    kind: str = "ashmem",
    output_dims: Sequence[Sequence[int]] | None = None,
) -> RequestBuffers:
    """A request for main: inputs written into one pool, `output_sizes[i]` bytes reserved for output i in another.

    An input of None is passed with hasNoValue. Inputs carry their dimensions; outputs carry `output_dims`
    when given, else none.
    """
    main = model.main
    if len(inputs) != len(main.input_indexes) or len(output_sizes) != len(main.output_indexes):
        raise ValueError(
            f"model has {len(main.input_indexes)} inputs and {len(main.output_indexes)} outputs; "
            f"got {len(inputs)} and {len(output_sizes)}"
        )
    factory = MEMORY_FACTORIES[kind]
    in_args, offset, chunks = [], 0, []
    for value, operand_index in zip(inputs, main.input_indexes):
        if value is None:
            in_args.append(RequestArgument(has_no_value=True))
            continue
        data = np.ascontiguousarray(value, dtype=numpy_dtype(main.operands[operand_index].type))
        raw = data.tobytes()
        in_args.append(RequestArgument(False, DataLocation(0, offset, len(raw)), list(data.shape)))
        chunks.append((offset, raw))
        offset = _aligned(offset + len(raw))
    in_pool = factory(max(offset, 1))
    for at, raw in chunks:
        in_pool.write(at, raw)
    out_args, offset, dtypes = [], 0, []
    for i, (size, operand_index) in enumerate(zip(output_sizes, main.output_indexes)):
        dims = list(output_dims[i]) if output_dims is not None else []
        out_args.append(RequestArgument(False, DataLocation(1, offset, int(size)), dims))
        dtypes.append(numpy_dtype(main.operands[operand_index].type))
        offset = _aligned(offset + int(size))
    out_pool = factory(max(offset, 1))
    request = Request(inputs=in_args, outputs=out_args, pools=[in_pool, out_pool])
    return RequestBuffers(request, [in_pool, out_pool], dtypes)


def byte_size(operand_type: int, dimensions: Sequence[int]) -> int:
    """Bytes of a fully specified tensor (a scalar for an empty dimension list)."""
    return element_size(operand_type) * (int(np.prod(dimensions)) if len(dimensions) else 1)
