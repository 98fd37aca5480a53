"""The numpy backend: the driver's own graph executor and kernels."""
