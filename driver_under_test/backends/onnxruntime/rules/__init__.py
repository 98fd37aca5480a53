"""The translation rules, one module per family; importing this package registers them all."""

from driver_under_test.backends.onnxruntime.rules import (
    control_flow,  # noqa: F401
    elementwise,  # noqa: F401
    nn,  # noqa: F401
    recurrent,  # noqa: F401
    reduction,  # noqa: F401
    shape,  # noqa: F401
    unsupported,  # noqa: F401
)
