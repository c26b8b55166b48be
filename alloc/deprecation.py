"""Renamed public names: the old name stays one release as a deprecated
alias that warns (`DeprecationWarning`) on use.

A module that renamed something sets, at its end,

```python
__getattr__ = renamed(__name__, {"OldName": "NewName"}, globals())
```

and `from module import OldName` (or `module.OldName`) then gives the new
object with a warning naming the new name.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping


def renamed(module: str, names: Mapping[str, str],
            namespace: Mapping[str, Any]) -> Callable[[str], Any]:
    """A module `__getattr__` serving each old name of `names` (old -> new)
    as the object now called new, with a `DeprecationWarning`.

    Examples
    --------
    >>> import warnings
    >>> getter = renamed("mod", {"old": "new"}, {"new": 42})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     value = getter("old")
    >>> value, caught[0].category.__name__
    (42, 'DeprecationWarning')
    >>> str(caught[0].message)
    'mod.old is deprecated: use mod.new (the old name goes in the next release)'
    """
    def __getattr__(name: str) -> Any:
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warn_renamed(module, name, new, stacklevel=2)
        return namespace[new]
    return __getattr__


def warn_renamed(module: str, old: str, new: str, stacklevel: int = 2) -> None:
    """The `DeprecationWarning` for the use of `module.old`, now `module.new`
    (`stacklevel` as for `warnings.warn`, counted from the caller)."""
    warnings.warn(f"{module}.{old} is deprecated: use {module}.{new} (the old name goes in "
                  f"the next release)", DeprecationWarning, stacklevel=stacklevel + 1)


#: The renamed options already warned about in this process.
_OPTIONS_WARNED: set[tuple[str, str]] = set()


def warn_renamed_option(owner: str, old: str, new: str, stacklevel: int = 2) -> None:
    """The `DeprecationWarning` for option `old` of `owner` (e.g. ``"solver
    'hived'"``), now called `new`: once per process, however many calls use it.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_renamed_option("solver 'doc'", "old", "new")
    ...     warn_renamed_option("solver 'doc'", "old", "new")
    >>> len(caught), str(caught[0].message)
    (1, "solver 'doc' option 'old' is deprecated: use 'new' (the old name goes in the next release)")
    """
    if (owner, old) in _OPTIONS_WARNED:
        return
    _OPTIONS_WARNED.add((owner, old))
    warnings.warn(f"{owner} option {old!r} is deprecated: use {new!r} (the old name goes in "
                  f"the next release)", DeprecationWarning, stacklevel=stacklevel + 1)
