"""The case format: one self-contained test input as readable JSON, and its live HAL objects in the process running it.

`Case` holds the JSON fields and, in the process that runs it, its `Live` objects (model, inputs, request over shared
memory, reference result). The modules below convert each part: models (`json_model`), pools (`pools`), operand
values (`values`), inputs (`inputs`), requests (`request`); `conformance` reads the public test vectors into cases.
"""

from harness.case.case import CASE_FORMAT_VERSION, Case
from harness.case.conformance import (
    ConformanceCase,
    ConformanceDataMissing,
    Example,
    conformance_dir,
    load_vectors,
    vector_files,
)
from harness.case.files import dump_case, load_case
from harness.case.inputs import inputs_from_json, inputs_to_json
from harness.case.json_model import CaseFormatError, model_from_json, model_to_json, pools_from_json
from harness.case.live import Live, close_model_pools
from harness.case.pools import pool_from_json, pool_to_json
from harness.case.request import (
    ConflictingInputsError,
    LiveRequest,
    RequestFormatError,
    argument_from_json,
    argument_to_json,
    build_request,
    request_to_json,
    simple_request,
    simple_request_json,
)
from harness.case.values import normalize_values, pack, to_json_values, unpack

__all__ = [
    "CASE_FORMAT_VERSION",
    "Case",
    "CaseFormatError",
    "ConformanceCase",
    "ConformanceDataMissing",
    "Example",
    "Live",
    "LiveRequest",
    "ConflictingInputsError",
    "RequestFormatError",
    "argument_from_json",
    "argument_to_json",
    "build_request",
    "close_model_pools",
    "conformance_dir",
    "dump_case",
    "inputs_from_json",
    "inputs_to_json",
    "load_case",
    "load_vectors",
    "model_from_json",
    "model_to_json",
    "normalize_values",
    "pack",
    "pool_from_json",
    "pool_to_json",
    "pools_from_json",
    "request_to_json",
    "simple_request",
    "simple_request_json",
    "to_json_values",
    "unpack",
    "vector_files",
]
