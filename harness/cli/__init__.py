"""The `nnfuzz` command."""
