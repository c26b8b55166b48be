"""Which kernel engine the exact family solves its integer models with, and
the engine settings that suit pattern models."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...deprecation import renamed
from ...deadline import Deadline
from ...kernel import (LinearModel, Result, import_seconds, preload, preload_in_background,
                        solve)


@dataclass(frozen=True)
class Backend:
    """A kernel engine (``"cpsat"``, ``"highs"`` or ``"cbc"``) with the
    exact family's settings (formerly `Engine`, a name hived's cell allocator
    also has).

    CP-SAT: one worker (deterministic for a seed) except on large models or
    hinted masters (``workers``); the full LP linearisation
    (``linearization_level = 2``) on pattern masters up to 2,500 columns,
    where it proves (and finds) far faster than the default.

    ``deterministic``: one worker on every model and each CP-SAT search
    stopped by `max_deterministic_time` (CP-SAT's count of work, in about
    seconds) set to the budget it is given, so that where it stops does not
    depend on the machine's load; the wall clock still bounds it.
    """
    name: str
    workers: int = 1
    deterministic: bool = False

    def ready(self, deadline: Deadline, stats: dict, settle: float = 0.0) -> "Backend | None":
        """The engine to solve with from now on, imported, or None: no model
        this call.  A first call's import counts against its limit (the
        configuration model imports after its warm start).  Column generation
        solves its LPs with HiGHS whatever the engine, so the engine's modules
        and HiGHS's are imported here when the time left covers them
        (`alloc.kernel.import_seconds`; ``stats["import_s"]`` the seconds
        it took).  Else, with
        time for HiGHS's, this call solves with HiGHS; with less, it builds
        no model (the heuristics answer); either way the engine's import
        starts in the background for the next calls
        (``stats["engine_fallback"]`` says so), once this one has answered:
        after the deadline and ``settle`` seconds more (what the call keeps
        back for its final check)."""
        need = import_seconds("highs", self.name)
        if not need:
            return self
        left = deadline.left()
        if left >= need:
            t = preload(("highs", self.name))
            if t > 1e-3:
                stats["import_s"] = t
            return self
        why = f"{self.name} not imported yet and {left:.2f} s left (under {need:.2f} s)"
        after = left + settle
        preload_in_background(self.name, after)
        if self.name != "highs" and left >= import_seconds("highs"):
            preload(("highs",))
            stats["engine_fallback"] = (f"{why}: HiGHS this call, {self.name} imported "
                                        f"in the background")
            stats["engine"] = "highs"
            return Backend("highs")
        preload_in_background("highs", after)
        stats["engine_fallback"] = (f"{why}: no model this call, {self.name} imported in "
                                    f"the background")
        return None

    def solve(self, model: LinearModel, deadline: Deadline, seed: int = 0) -> Result:
        """Solve ``model`` before ``deadline``."""
        params: dict[str, Any] = {}
        if self.name == "cpsat":
            big = model.n > 2000 or bool(model.hint)
            params["workers"] = self.workers if big and not self.deterministic else 1
            if self.deterministic:
                params["max_deterministic_time"] = max(1e-3, min(deadline.total, deadline.left()))
            if model.name == "master" and model.n <= 2500:
                params["linearization_level"] = 2
        return solve(model, self.name, deadline=deadline, seed=seed, **params)


__all__ = ["Backend"]


__getattr__ = renamed(__name__, {"Engine": "Backend"}, globals())
