"""Hypothesis settings profiles for the test tiers (REQUIREMENTS H5, STYLE 11).

- ci: quick and deterministic (derandomized, no example database, no deadline, no shrinking). Registered as
  "ci" so that it replaces Hypothesis's built-in profile of that name, which loads when the CI variable is set.
- dev: the default outside CI: moderate example counts, the local example database, no deadline.
- nightly: long runs: many examples, the example database in NNFUZZ_HYPOTHESIS_DB (a directory) or the default;
  with NNFUZZ_HYPOTHESIS_REDIS set (a redis:// URL), failures are also shared through that Redis server, so every
  machine replays what any other found (needs the redis package, which is not a dependency: pip install redis).

HYPOTHESIS_PROFILE names the profile to load; without it, ci when CI is set, else dev.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, MultiplexedDatabase

# Generated models are built by many small draws and rejected now and then (GenerationRejected): neither is a
# problem with the tests.
_SLOW_GENERATION = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

# No shrinking in CI: a failure is reported as found (the case is printed in full) and the run stays short;
# rerun with HYPOTHESIS_PROFILE=dev to shrink it.
settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=_SLOW_GENERATION,
)
settings.register_profile("dev", max_examples=200, deadline=None, suppress_health_check=_SLOW_GENERATION)


def nightly_database(environ: os._Environ | dict = os.environ) -> ExampleDatabase | None:
    """The nightly example database: a directory (NNFUZZ_HYPOTHESIS_DB), shared through Redis when
    NNFUZZ_HYPOTHESIS_REDIS names a server; None for Hypothesis's default."""
    local = (
        DirectoryBasedExampleDatabase(environ["NNFUZZ_HYPOTHESIS_DB"]) if environ.get("NNFUZZ_HYPOTHESIS_DB") else None
    )
    url = environ.get("NNFUZZ_HYPOTHESIS_REDIS")
    if not url:
        return local
    try:  # imported only when asked for: redis is not a dependency
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError as exc:
        raise RuntimeError(
            "NNFUZZ_HYPOTHESIS_REDIS is set but the redis package is missing: pip install redis"
        ) from exc
    shared = RedisExampleDatabase(redis.Redis.from_url(url))
    return MultiplexedDatabase(local or DirectoryBasedExampleDatabase(".hypothesis/examples"), shared)


_nightly_db = nightly_database()
settings.register_profile(
    "nightly",
    max_examples=10_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=_SLOW_GENERATION,
    **({"database": _nightly_db} if _nightly_db is not None else {}),
)


def selected_profile(environ: os._Environ | dict = os.environ) -> str:
    """The profile to load: HYPOTHESIS_PROFILE, else ci when CI is set, else dev."""
    if environ.get("HYPOTHESIS_PROFILE"):
        return environ["HYPOTHESIS_PROFILE"]
    return "ci" if environ.get("CI") else "dev"


settings.load_profile(selected_profile())
