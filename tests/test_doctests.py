"""The examples in alloc's docstrings run as doctests (every module; a module
whose optional extra is absent is skipped, naming the extra)."""
import doctest
import importlib
import pkgutil

import pytest

import alloc

MODULES = sorted(m.name for m in pkgutil.walk_packages(alloc.__path__, "alloc.")
                 if not m.name.endswith("__main__"))
#: Modules that need an optional extra, and the extra.
EXTRAS = {"alloc.service": "service"}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _load(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        extra = next((e for p, e in EXTRAS.items() if name.startswith(p)), None)
        if extra is None:
            raise
        pytest.skip(f"{name} needs the {extra!r} extra ({exc.name} is not installed)")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)          # examples name shipped files, not paths
    mod = _load(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in finder.find(mod, name):
        if test.examples and test.name.startswith(name):
            runner.run(test)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{name}: {res.failed} of {res.attempted} examples failed (above)"


def test_the_public_api_has_examples():
    """Every name of `alloc.__all__` shows an example (its own or its class's)."""
    missing = []
    for n in alloc.__all__:
        obj = getattr(alloc, n)
        if n == "__version__" or not callable(obj):  # data: documented on its module page
            continue
        if ">>>" not in (obj.__doc__ or ""):
            missing.append(n)
    assert not missing, f"no Examples section: {', '.join(missing)}"
