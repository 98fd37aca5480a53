"""Tests of the LiteRT backend (driver_under_test/backends/litert)."""
