import pytest

import paam


@pytest.fixture
def server():
    """A private paamd (CPU backend, one bucket, device unpinned so tests run anywhere)."""
    with paam.testing.start_server(buckets=1, device_cpu=-2) as srv:
        yield srv


@pytest.fixture
def server2():
    """A private paamd with two buckets."""
    with paam.testing.start_server(buckets=2, device_cpu=-2) as srv:
        yield srv
