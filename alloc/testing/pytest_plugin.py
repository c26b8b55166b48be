"""A pytest plugin: the conformance suite as fixtures.

Enable it in a ``conftest.py``

```python
pytest_plugins = ["alloc.testing.pytest_plugin"]
```

(or ``pytest -p alloc.testing.pytest_plugin``).  It adds

* the fixture ``check_solver`` -- `alloc.testing.check_solver` with the
  command line's ``--alloc-examples`` (calls per solver; default: the active
  hypothesis profile's);
* the fixture ``check_solvers`` -- `alloc.testing.check_solvers` likewise;
* the fixture ``registered`` -- ``registered(name, target, **declaration)``
  registers a solver for the test only (`alloc.register`; removed after it).

A test then reads ``def test_mine(check_solver): check_solver("mine")``.
Needs hypothesis and pytest (the ``test`` extra).
"""
from __future__ import annotations

import functools

import pytest


def pytest_addoption(parser) -> None:
    """``--alloc-examples N``: calls the conformance fixtures draw per solver."""
    parser.addoption("--alloc-examples", type=int, default=None,
                     help="calls the alloc conformance fixtures draw per solver "
                          "(default: the hypothesis profile's max_examples)")


@pytest.fixture
def check_solver(request):
    """`alloc.testing.check_solver` with ``--alloc-examples`` applied."""
    from .suite import check_solver as run
    n = request.config.getoption("--alloc-examples")
    return functools.partial(run, max_examples=n) if n else run


@pytest.fixture
def check_solvers(request):
    """`alloc.testing.check_solvers` with ``--alloc-examples`` applied."""
    from .suite import check_solvers as run
    n = request.config.getoption("--alloc-examples")
    return functools.partial(run, max_examples=n) if n else run


@pytest.fixture
def registered():
    """Register solvers for one test: ``registered("mine", solve)``."""
    from ..registry import register, unregister
    names: list[str] = []

    def add(name: str, target, **declaration):
        info = register(name, target, **declaration)
        names.append(name)
        return info

    yield add
    for name in names:
        unregister(name)
