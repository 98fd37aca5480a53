"""Fixtures for the caching tests: a device whose token store lives in the test's own folder."""

from __future__ import annotations

import pytest

from driver_under_test import create_device
from tests.driver.cache.support import CacheFiles


@pytest.fixture
def store_dir(tmp_path):
    """The folder of the device's persistent token store."""
    return tmp_path / "store"


@pytest.fixture
def make_device(store_dir):
    """A factory of devices sharing the test's store: make_device(faults=[...], **options)."""

    def make(faults=(), **options):
        options.setdefault("cache_dir", str(store_dir))
        return create_device(faults=list(faults), **options)

    return make


@pytest.fixture
def dev(make_device):
    """A fault-free device with caching on and a private store."""
    return make_device()


@pytest.fixture
def cache_files(tmp_path):
    """A factory of named pairs of cache files in the test's folder."""
    return lambda name="cache": CacheFiles(tmp_path, name)
