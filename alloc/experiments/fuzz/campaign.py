"""The fuzz campaign: random inputs through the public entry points, every
answer held to the promises alloc makes, failures counted per check.

Checks (the names the counts are printed under):

``bound-below-value``
    a reported bound below the answer's own value, below another solver's
    value on the same input and objective, or below the brute-force optimum;
``false optimal``
    ``optimal`` claimed by a heuristic, or below another solver's value or
    the brute-force optimum;
``deadline overrun``
    a call longer than ``time_limit * 1.1 + 0.5`` s (wall clock; the load
    average at the time is kept with the failure);
``exact below heuristic``
    an exact solver of the exact family (or one that solves the problem as
    given) below an applicable heuristic on the same input and objective;
``invalid``
    an answer the checked path refused (a ``SolverError`` naming a
    violation), one that [alloc.check.violations][] refuses, a value that is
    not the placements' value, shares that break a rule;
``crash``
    any other exception, on a valid input or a malformed one; a malformed
    file answered with a traceback, an exit code other than 0 or 2, or an
    error message of more than one line.

Inputs, in turn: a generated instance solved by every applicable solver
under each objective (running jobs kept unless a move budget is drawn;
sometimes with the caller's order and, with running jobs and no tenancy,
preemption by that order; the checks then hold the answer to both);
a tiny instance checked against [alloc.experiments.fuzz.brute.brute_force][];
a mutated instance file and a mutated openb CSV through the command line's
loaders; a shares problem through every policy (max-sum, max-min and
makespan also against an independent LP by SciPy when it has no pairs); a
mutated shares file.
"""
from __future__ import annotations

import io
import math
import os
import random
import tempfile
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

from ...check import violations
from ...deadline import allowance
from ...errors import InputError, SolverError
from ...model import Status
from ...objectives import allocation_value
from ...registry import solvers
from ...solve import allocate, needed_capabilities
from .brute import brute_force
from .generate import dumps, mutate, mutate_csv, shares_doc, valid_instance

CHECKS = ("bound-below-value", "false optimal", "deadline overrun", "exact below heuristic",
          "invalid", "crash")
OBJECTIVES = ("throughput", "gpus", "jobs")
EXACT_FAMILY = ("cpsat", "milp", "milp-cbc", "cpsat-tenancy")
TOL = 1e-6


def close(a: float, b: float) -> float:
    """The tolerance between two values of magnitude ``a``, ``b``."""
    return TOL * max(1.0, abs(a), abs(b))


@dataclass
class Tally:
    """Counts per check and input kind, and the failures with what reproduces
    them (``context``: the call being checked, kept with each failure)."""
    counts: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)
    save: Path | None = None
    context: dict = field(default_factory=dict)

    def fail(self, check: str, what: str, doc=None, **detail) -> None:
        """Count one failure of ``check`` and keep its details (and the input
        under ``save``)."""
        self.counts[check] += 1
        rec = {"check": check, "what": what, **self.context, **detail}
        if self.save is not None and doc is not None:
            self.save.mkdir(parents=True, exist_ok=True)
            path = self.save / f"{check.replace(' ', '_')}-{len(self.failures)}.json"
            path.write_text(doc if isinstance(doc, str) else dumps(doc))
            rec["input"] = str(path)
        self.failures.append(rec)


# ------------------------------------------------------------------ instances
def applicable(cluster, jobs, preempt: str | None = None) -> list[str]:
    """Available solvers whose capabilities cover the input and the call's
    preemption rule."""
    need = needed_capabilities(cluster, jobs, preempt)
    return [n for n, s in solvers().items() if s.available and need <= s.capabilities]


def run_one(tally: Tally, doc, inst, name: str, objective: str, limit: float, call: dict):
    """One solver call, checked on its own; returns the allocation or None."""
    t0 = time.perf_counter()
    try:
        a = allocate(inst.cluster, inst.jobs, solver=name, objective=objective, time_limit=limit,
                     instance=inst.name, **call)
    except SolverError as exc:
        tally.fail("invalid", f"{name}/{objective}", doc, error=str(exc)[:300])
        return None
    except Exception as exc:  # every other exception on a valid input is a crash
        tally.fail("crash", f"{name}/{objective}", doc, error=f"{type(exc).__name__}: {exc}"[:300])
        return None
    wall = time.perf_counter() - t0
    tally.counts["solver runs"] += 1
    if wall > allowance(limit):
        tally.fail("deadline overrun", f"{name}/{objective}", doc, limit=limit,
                   wall=round(wall, 3), load=os.getloadavg()[0])
    allowed = None if (call.get("max_moves") is None and call.get("move_cost") is not None) \
        else (call.get("max_moves") or 0)
    bad = violations(inst.cluster, inst.jobs, a, max_moves=allowed, order=call.get("order"),
                     preempt=call.get("preempt"))
    moves = (call.get("move_cost") or 0.0) * len(a.moved)
    value = allocation_value(objective, inst.jobs, a.placements) - moves
    if bad or abs(value - a.value) > close(value, a.value):
        tally.fail("invalid", f"{name}/{objective}", doc, error=(bad or ["value"])[0][:300])
    if a.bound is not None and a.value > a.bound + close(a.value, a.bound):
        tally.fail("bound-below-value", f"{name}/{objective}", doc, value=a.value, bound=a.bound)
    if a.status is Status.OPTIMAL and not solvers()[name].exact:
        tally.fail("false optimal", f"{name}/{objective}", doc, why="heuristic claims optimal")
    return a


def cross_check(tally: Tally, doc, results: dict, objective: str, best: float | None = None):
    """Bounds, optimum claims and exact-versus-heuristic across the solvers
    of one input and objective (``best``: the brute-force optimum)."""
    reg = solvers()
    top = max((a.value for a in results.values()), default=0.0)
    if best is not None:
        if top > best + close(top, best):
            tally.fail("invalid", f"above the brute-force optimum/{objective}", doc, value=top,
                       optimum=best)
        top = max(top, best)
    for n, a in results.items():
        if a.bound is not None and top > a.bound + close(top, a.bound):
            tally.fail("bound-below-value", f"{n}/{objective}", doc, bound=a.bound, best=top)
        if a.status is Status.OPTIMAL and a.value < top - close(top, a.value):
            tally.fail("false optimal", f"{n}/{objective}", doc, value=a.value, best=top)
    heur = {n: a.value for n, a in results.items() if not reg[n].exact}
    for n, a in results.items():
        if not (n in EXACT_FAMILY or reg[n].solves_problem_as_given) or not heur:
            continue
        h = max(heur, key=lambda n: heur[n])
        if a.value < heur[h] - close(a.value, heur[h]):
            tally.fail("exact below heuristic", f"{n}/{objective}", doc, value=a.value,
                       heuristic=h, heuristic_value=heur[h])


def draw_call(rng: random.Random, inst) -> dict:
    """The call's settings: mostly none; sometimes the caller's order of (some
    of) the jobs; with running jobs sometimes a move budget, a move cost or,
    without tenancy, preemption by the order (``preempt="order"``)."""
    call: dict = {}
    tenancy = inst.cluster.tenants or any(j.tenant or j.guaranteed for j in inst.jobs)
    running = any(j.current is not None for j in inst.jobs)
    if rng.random() < (0.4 if running and not tenancy else 0.1):
        ids = [j.id for j in inst.jobs]
        rng.shuffle(ids)
        call["order"] = ids[:rng.randint(1, len(ids))] if rng.random() < 0.3 else ids
        if running and not tenancy and rng.random() < 0.6:
            call["preempt"] = "order"
    if not running:
        return call
    r = rng.random()
    return {**call, **({"max_moves": 1} if r < 0.1 else ({"move_cost": 0.1} if r < 0.2 else {}))}


def fuzz_instance(tally: Tally, rng: random.Random, limits, tiny: bool = False) -> None:
    """A generated instance through every applicable solver and objective."""
    doc, inst = valid_instance(rng, tiny=tiny, name=f"fz{rng.randrange(10 ** 6)}")
    tally.counts["tiny instances" if tiny else "instances"] += 1
    call = {} if tiny else draw_call(rng, inst)
    names = applicable(inst.cluster, inst.jobs, call.get("preempt"))
    for objective in OBJECTIVES:
        limit = rng.choice(limits)
        tally.context = {"call": call, "time_limit": limit}
        results = {n: a for n in names
                   if (a := run_one(tally, doc, inst, n, objective, limit, call)) is not None}
        best = brute_force(inst.cluster, inst.jobs, objective) if tiny else None
        cross_check(tally, doc, results, objective, best)
    tally.context = {}


# ------------------------------------------------------------------ files
def cli_run(argv: list[str]) -> tuple[int, str]:
    """``alloc ARGV`` in-process: (exit code, stderr); an escaping exception
    is returned as exit code -1 with its traceback's last line."""
    from ...cli import main
    err = io.StringIO()
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(err):
            rc = main(argv)
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # a traceback is what this check exists to catch
        return -1, f"{type(exc).__name__}: {exc}"
    return rc, err.getvalue()


def check_cli(tally: Tally, what: str, text: str, argv_of) -> None:
    """A malformed file through the command line: exit 0 (still valid) or 2
    with one error line naming the file (warnings, ``alloc: warning: ...``,
    may precede it); anything else is a crash."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "input.json"
        path.write_text(text)
        rc, err = cli_run(argv_of(str(path)))
    tally.counts[f"{what} files"] += 1
    if rc == 2:
        tally.counts[f"{what} files refused"] += 1
        lines = [x for x in err.splitlines()
                 if x.strip() and not x.startswith("alloc: warning:")]
        if len(lines) != 1 or str(path) not in lines[0]:
            tally.fail("crash", what, text, rc=rc, error=err[:300])
    elif rc != 0:
        tally.fail("crash", what, text, rc=rc, error=err[:300])


def fuzz_files(tally: Tally, rng: random.Random, limits) -> None:
    """A mutated instance file, a mutated shares file and a mutated openb CSV."""
    doc, _ = valid_instance(rng, running=False)
    check_cli(tally, "instance", dumps(mutate(rng, doc)),
              lambda p: ["solve", p, "--solver", rng.choice(("best-fit", "hived", "cpsat")),
                         "--time-limit", str(min(limits))])
    check_cli(tally, "shares", dumps(mutate(rng, shares_doc(rng))),
              lambda p: ["shares", p, "--policy", rng.choice(("max-min", "makespan", "max-sum")),
                         "--time-limit", str(min(limits))])
    fuzz_csv(tally, rng)


PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "p0,12000,16384,1,500,,LS,Running,0,100,0\n"
        "p1,6000,12288,2,1000,V100M16,LS,Running,5,90,5\n"
        "p2,4000,8192,0,0,,BE,Running,7,50,7\n")
NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,8,V100M16\nn1,64000,262144,2,T4\n"


def fuzz_csv(tally: Tally, rng: random.Random) -> None:
    """A mutated openb pod or node CSV through the openb loaders."""
    from ..openb import load_nodes, load_pods
    pods, nodes = PODS, NODES
    if rng.random() < 0.5:
        pods = mutate_csv(rng, pods)
    else:
        nodes = mutate_csv(rng, nodes)
    with tempfile.TemporaryDirectory() as tmp:
        pp, np_ = Path(tmp) / "pods.csv", Path(tmp) / "nodes.csv"
        pp.write_text(pods)
        np_.write_text(nodes)
        tally.counts["openb files"] += 1
        try:
            load_pods(pp)
            load_nodes(np_)
        except InputError as exc:
            tally.counts["openb files refused"] += 1
            if "\n" in str(exc):
                tally.fail("crash", "openb", pods + nodes, error=str(exc)[:300])
        except Exception as exc:  # anything but a one-line InputError
            tally.fail("crash", "openb", pods + nodes, error=f"{type(exc).__name__}: {exc}"[:300])


# ------------------------------------------------------------------ shares
SHARE_POLICIES = ("max-min", "max-sum", "makespan", "finish-time-fairness", "water-filling",
                  "hierarchical", "isolated", "proportional", "fifo", "gandiva", "allox",
                  "max-min-agnostic")
#: policies whose objective is minimised (a bound is a lower bound)
MINIMISED = ("makespan", "finish-time-fairness")


def fuzz_shares(tally: Tally, rng: random.Random, limits) -> None:
    """A shares problem through every policy (module notes)."""
    from ...shares import problem_from_dict, solve_shares
    from ...shares import check as shares_check
    doc = shares_doc(rng, pairs=rng.random() < 0.5)
    try:
        p = problem_from_dict(doc)
    except InputError:
        tally.counts["shares problems refused"] += 1
        return
    tally.counts["shares problems"] += 1
    for policy in SHARE_POLICIES:
        limit = rng.choice(limits)
        t0 = time.perf_counter()
        try:
            r = solve_shares(p, policy, time_limit=limit, seed=rng.randrange(100))
        except InputError:
            continue
        except SolverError as exc:
            tally.fail("invalid", f"shares/{policy}", doc, error=str(exc)[:300])
            continue
        except Exception as exc:  # every other exception is a crash
            tally.fail("crash", f"shares/{policy}", doc, error=f"{type(exc).__name__}: {exc}"[:300])
            continue
        wall = time.perf_counter() - t0
        tally.counts["shares runs"] += 1
        if wall > allowance(limit):
            tally.fail("deadline overrun", f"shares/{policy}", doc, limit=limit,
                       wall=round(wall, 3), load=os.getloadavg()[0])
        bad = shares_check.violations(p, r.X, r.Y)
        if bad:
            tally.fail("invalid", f"shares/{policy}", doc, error=bad[0][:300])
        check_share_bound(tally, doc, p, policy, r)


def check_share_bound(tally: Tally, doc, p, policy: str, r) -> None:
    """Objective against the policy's bound and, for LPs without pairs,
    against an independent optimum."""
    obj, bound = r.objective, r.bound
    lower = policy in MINIMISED
    if obj is not None and bound is not None and math.isfinite(bound):
        if (obj < bound - close(obj, bound)) if lower else (obj > bound + close(obj, bound)):
            tally.fail("bound-below-value", f"shares/{policy}", doc, value=obj, bound=bound)
    if r.status is not Status.OPTIMAL or obj is None or p.pairs or policy not in REFERENCE:
        return
    ref = REFERENCE[policy](p)
    if ref is None:
        return
    worse = obj > ref + 1e-4 * max(1.0, abs(ref)) if lower else obj < ref - 1e-4 * max(1.0, abs(ref))
    if worse:
        tally.fail("false optimal", f"shares/{policy}", doc, value=obj, reference=ref)


def _share_lp(p, objective_rows):
    """SciPy's optimum of ``max t`` or ``max sum`` over the share polytope
    (X >= 0, each job's time <= 1, each type's GPUs), or None."""
    import numpy as np
    from scipy.optimize import linprog
    m, k = p.m, p.k
    T = p.runnable_throughput
    n = m * k + 1
    A, b = [], []
    for i in range(m):
        row = np.zeros(n)
        row[i * k:(i + 1) * k] = 1
        A.append(row)
        b.append(1.0)
    for j in range(k):
        row = np.zeros(n)
        row[j:m * k:k] = p.scale_factor
        A.append(row)
        b.append(p.capacity[j])
    c, extra_A, extra_b = objective_rows(T, n)
    bounds = [(0, None if T[i // k, i % k] > 0 else 0) for i in range(m * k)] + [(None, None)]
    res = linprog(c, A_ub=np.array(A + extra_A), b_ub=np.array(b + extra_b), bounds=bounds,
                  method="highs")
    return -res.fun if res.status == 0 else None


def _ref_max_sum(p):
    import numpy as np

    def rows(T, n):
        c = np.zeros(n)
        c[:-1] = -T.reshape(-1)
        return c, [], []
    return _share_lp(p, rows)


def _ref_makespan(p):
    """``max mu`` with each live job's rate ``T_i . X_i / steps_i >= mu / L``:
    the makespan is ``L / mu``.  ``L``, the longest live job alone on its
    fastest GPU type, keeps ``mu`` near 1: unscaled, the rate of a job of a
    million steps (about 1e-7) is within the LP's tolerances of zero."""
    import numpy as np
    live = p.served & (p.steps_remaining > 0)
    if not live.any():
        return None
    T0 = p.runnable_throughput
    fastest = T0[live].max(axis=1)
    if not (fastest > 0).all():
        return None
    L = float((p.steps_remaining[live] / fastest).max())

    def rows(T, n):
        k = p.k
        c = np.zeros(n)
        c[-1] = -1.0
        A, b = [], []
        for i in np.flatnonzero(live):
            row = np.zeros(n)
            row[i * k:(i + 1) * k] = -L * T[i] / p.steps_remaining[i]
            row[-1] = 1.0
            A.append(row)
            b.append(0.0)
        return c, A, b
    mu = _share_lp(p, rows)
    return L / mu if mu else None


REFERENCE = {"max-sum": _ref_max_sum, "makespan": _ref_makespan}


# ------------------------------------------------------------------ campaign
def campaign(seconds: float, *, seed: int = 0, limits=(0.5, 1.0, 2.0), save: Path | None = None,
             progress=None) -> Tally:
    """Fuzz for ``seconds``: rounds of a generated instance, a tiny one, the
    malformed files and a shares problem; returns the counts and failures."""
    rng = random.Random(seed)
    tally = Tally(save=save)
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        rounds += 1
        for step in (fuzz_instance, fuzz_tiny, fuzz_files, fuzz_shares):
            if time.monotonic() >= end:
                break
            try:
                step(tally, rng, limits)
            except Exception as exc:  # the harness itself must not stop the campaign
                tally.fail("crash", step.__name__, None, error=f"{type(exc).__name__}: {exc}"[:300])
        if progress is not None:
            progress(rounds, tally)
    tally.counts["rounds"] = rounds
    return tally


def fuzz_tiny(tally: Tally, rng: random.Random, limits) -> None:
    """A tiny instance against the brute-force optimum."""
    fuzz_instance(tally, rng, limits, tiny=True)


__all__ = ["CHECKS", "Tally", "campaign", "cross_check", "fuzz_files", "fuzz_instance",
           "fuzz_shares", "fuzz_tiny", "run_one"]
