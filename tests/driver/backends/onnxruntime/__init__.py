"""Tests of the ONNX Runtime backend (driver_under_test/backends/onnxruntime)."""
