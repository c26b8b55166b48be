"""Names that say what they are: the CPU/memory grid point, the exact
family's backend and the profile loader; the old public names stay one
release as aliases that warn (`DeprecationWarning`) where they are used."""
import importlib
import warnings

import pytest

import alloc


@pytest.mark.parametrize("module, old, new", [
    ("alloc", "load_model", "load_profile"),
    ("alloc.profiles", "load_model", "load_profile"),
    ("alloc.problem", "Option", "GridPoint"),
    ("alloc.engines.configuration.backend", "Engine", "Backend"),
])
def test_old_name_is_a_warning_alias(module, old, new):
    mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is deprecated: use "
                                                rf"{module}\.{new}") as rec:
        value = getattr(mod, old)
    assert value is getattr(mod, new)
    assert rec[0].filename == __file__            # points at the line that used it
    assert old not in getattr(mod, "__all__", ())


def test_from_import_warns_and_new_names_do_not():
    with pytest.warns(DeprecationWarning, match="GridPoint"):
        from alloc.problem import Option  # noqa: F401
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from alloc.problem import GridPoint, pareto_options
        from alloc.engines.configuration.backend import Backend  # noqa: F401
        prof = alloc.load_profile("res18")
        assert prof.name == "res18"
        job = alloc.Job("a", 1, cpu=1000, mem=1000, model="res18", profile=prof)
        assert all(isinstance(o, GridPoint) for o in pareto_options(job))
    with pytest.raises(AttributeError):
        _ = alloc.no_such_name
