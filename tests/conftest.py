import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from alloc.kernel import preload

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ALLOC_SHARED", ROOT.parent / "shared"))

settings.register_profile("default", deadline=None, max_examples=30,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=30, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "default")

# The suite is one long-running process: it imports the engines once at
# start, as a service does, so that no test's exact call waits for, or runs
# without, an engine that an earlier test's first call left importing in the
# background.  First calls are tested in fresh processes and by patching.
preload(("highs", "cpsat", "cbc"))


@pytest.fixture
def shared_dir():
    if not SHARED.is_dir():
        pytest.skip("shared data folder is absent")
    return SHARED


@pytest.fixture
def instances_dir():
    return ROOT / "instances"
