"""Backends of the driver: what runs a prepared model besides the driver's own numpy kernels.

Each backend is a self-contained package that translates a validated HAL model into a real engine's format and
runs it (`litert`: LiteRT's interpreter over a TFLite flatbuffer).
"""
