"""The configuration model's driver: warm start, bounds, column generation, integer
master, proof, dive, polish -- each phase within its share of one deadline.

1. *Warm start*: every registered heuristic that applies to the input (the
   Synergy and online policies included) within ``warm_share`` of the time,
   cheapest first, the first ones (`WARM_FIRST`) each up to `WARM_FLOOR`
   of it if need be; the answer is never below the best of them.  Then the
   engine is imported if this process has not yet (a first call's import
   counts against the limit, after the heuristics have answered; with less
   time left than it takes, HiGHS solves this call, or no model with less
   than HiGHS's own import, `Backend.ready`) and the time the answer's
   placements and the final check will take is kept back
   (`ExactRun.keep_back_final`); without an engine, local search from the
   best answer polishes it with what is left.  Before the warm start, the
   *plan* (the aggregate's classes, a few hundredths of a second at 2,048
   jobs) says whether the model's items can be built in time; when not, the
   model is left out and local search as registered (from greedy-upgrade)
   has three quarters of the time, the other heuristics most of the rest.
2. *Bounds*: the sum of the jobs' honest upper coefficients, the LP-free
   item bound and the big-machine LP
   (`alloc.engines.configuration.bounds`).
3. *Column generation* (`alloc.engines.configuration.master`) within
   ``cg_share``, seeded with every heuristic solution's patterns and, in a
   scheduler loop, the last round's
   (`alloc.engines.configuration.carried`); its Lagrangian bound
   when the units are exact.
   Then the restricted LP *rounded down* (`round_down`: its columns' floors
   fixed, the small residual master solved).
4. *Integer master* over the pool, hinted with the best solution so far.
5. *Proof* (`alloc.engines.configuration.proof`) when column generation converged.
6. *Dive* (`alloc.engines.configuration.dive`) and a *polish* by local search
   with what is left.

Python's cyclic garbage collector is paused for the call (`alloc.collector.paused`).
Running jobs are fixed: the model places the pending jobs on what they leave;
their value is added to the bound.  Bounds round down to the objective's step.
Status OPTIMAL only when the recomputed value reaches the bound.
"""
from __future__ import annotations

import math
import time

from ...collector import paused
from ...deadline import Deadline
from ...model import Status
from ...objectives import tighten
from ...options import validate_options
from ...problem import Problem, Solution
from .aggregate import SECONDS_PER_ITEM, Aggregate, OutOfTime
from .bounds import big_machine_bound, item_bound, rounded
from .carried import carried_patterns, keep_patterns
from .columns import check_assign, decode, solution_to_columns, true_value
from .dive import dive, round_down
from .backend import Backend
from .master import CGResult, Master, column_generation, hint_from, solve_master_ip
from .proof import enumerate_and_solve
from ..greedy.compact import climbs, compacted

#: Heuristics tried first, each with all the warm-start time left (up to the
#: floor, `WARM_FLOOR`): the cheapest fallback, then the strongest, then the
#: others of each kind; ``fgd`` joins them on inputs with GPU sharing.  Every
#: other applicable one follows with an equal share of what is left of the
#: warm start's own time.  Greedy-upgrade comes before best-fit: on 2,048
#: jobs under a 0.5 s limit, behind best-fit and its check it was cut short
#: on a process's first call, and the answer fell below its own.
WARM_FIRST = ("proportional", "greedy-upgrade", "best-fit", "synergy-tune")
#: Heuristics tried first on inputs with GPU sharing.
WARM_FIRST_SHARING = ("proportional", "greedy-upgrade", "best-fit", "fgd", "synergy-tune")


#: Heuristic solutions worth less than this share of the best do not seed the
#: pool: their many distinct patterns (one-job servers) slow every LP of column
#: generation (23,000 columns instead of 7,500 at 12,500 servers) and the LP
#: hardly uses them.
SEED_SHARE = 0.5
#: The share of the budget up to which the first heuristics (`WARM_FIRST`)
#: may run, whatever ``warm_share``: on 2,048 jobs and 256 servers under a
#: 0.5 s limit, greedy-upgrade needs 0.15-0.25 s; cut at half the budget, it
#: left the answer at proportional's value (about half its own) while the
#: call returned with a third of its time unused.  What remains is kept for
#: the answer's placements and check (`FINAL_SHARE`).
WARM_FLOOR = 0.75
#: The answer's placements and final check (`alloc.solve.finish`, then
#: `alloc.check.violations`) against checking and valuing one answer in the
#: warm start (`check_assign`, `true_value`), per job: 3.1 at 8k GPUs, 6.2
#: and 6.5 at 32k (Synergy mix and heterogeneous), 10.3 at 100k
#: (heterogeneous; greedy-upgrade's answer, load average 4): it grows with
#: the size.
FINAL_PER_ANSWER = 10.0
#: ... and at least this many seconds per job, GPU and server: 12.4 s for
#: the heterogeneous 100k GPUs (100,000 jobs, 12,500 servers) at load
#: average 4, where one answer's check in the warm start had been quick.
FINAL_PER_UNIT = 6e-5
#: The most of the budget kept back for them beyond the call's own reserve.
FINAL_SHARE = 0.25
#: Carried columns (`alloc.engines.configuration.carried`) from which
#: only the best heuristic answer seeds the pool: the others' patterns cost
#: 20-30 ms a loop round to cut and mostly repeat the carried ones.
CARRIED_ENOUGH = 100
#: Share of the budget after which column generation stops for good when it
#: has not converged in its own share (`ExactRun.more_columns`).
MORE_COLUMNS_UNTIL = 0.85
#: With the value proven, the share of the budget past which the driver
#: stops looking for an answer of that value whose preferred jobs climb
#: fewer levels (the model's preferred-level terms).
PREFERRED_SHARE = 0.5


#: Seconds the first warm-start heuristic always has, however little of the
#: deadline is left when the warm start begins: a first call's imports took
#: all of a 0.1 s limit before it, and the answer placed nothing where
#: every heuristic places all (it then returns the heuristic's answer, within
#: the call's allowance of ``time_limit * 1.1 + 0.5`` s).
FIRST_SECONDS = 0.05


def in_order(problem: Problem, assign: dict) -> dict:
    """``assign`` (pending jobs only) as the answer will be under the order's
    promise (``preempt="order"``: `alloc.preempt.kept_order`, spread gangs
    allowed, as the exact solvers have them; an answer that
    keeps the order is left as it is); else ``assign``.  Every answer the
    driver compares goes through it -- the heuristics' too -- so the best it
    returns keeps the order and is worth at least every heuristic's answer
    kept in order."""
    if not problem.keeps_order or not problem.pending:
        return assign
    from ...preempt import kept_order
    out = kept_order(problem, assign)
    return {j: a for j, a in out.items() if j not in problem.fixed}


def need_ok(problem: Problem, capabilities) -> bool:
    """The input needs nothing beyond ``capabilities``."""
    return problem.needs <= capabilities


def warm_heuristics(problem: Problem, need=None) -> tuple[list[str], list[str]]:
    """Registered heuristics whose capabilities cover the input (``need``,
    the input's needed capabilities, when known): those tried first
    (`WARM_FIRST`, in that order) and the others (``local-search`` excluded:
    it runs last, as registered and from the best of them).  The deployed
    schedulers' topology rules (the ``tas`` family) join only when a job
    requires or prefers a level above the servers: elsewhere they place as
    best fit does."""
    from ...registry import solvers
    from ...topology import is_outer
    if need is None:
        need = problem.needs
    topo = any(is_outer(j.locality) or j.preferred is not None for j in problem.jobs)
    ok = [n for n, s in solvers().items()
          if not s.exact and s.family != "third-party" and need <= s.capabilities
          and s.available and n != "local-search" and (topo or s.family != "tas")]
    order = WARM_FIRST_SHARING if "sharing" in need else WARM_FIRST
    first = [n for n in order if n in ok]
    return first, [n for n in ok if n not in first]


def warm_start(problem: Problem, deadline: Deadline, seed: int = 0,
               floor: Deadline | None = None, local: bool = True, local_floor: bool = True,
               timing: dict | None = None):
    """Run the applicable heuristics: (best assign, its value, all solutions,
    value per heuristic).  The first ones (`warm_heuristics`) run one
    after the other, each up to ``floor`` (a later deadline; ``deadline``
    without one), so that they finish even on large instances; the others
    share what is left of ``deadline`` equally; local search last (as
    registered, then from the best, when its capabilities cover the input),
    also up to ``floor`` (only within ``deadline`` when ``local_floor`` is
    False; not at all when ``local`` is False).  ``timing``, when given, gets
    the seconds the largest answer's check and value took (``answer_s``) and
    its jobs (``answer_jobs``)."""
    from ...registry import get_solver
    sols, values = [], {}
    best, best_v = {}, 0.0
    need = problem.needs                  # the call's, computed once
    first, rest = warm_heuristics(problem, need)
    for k, name in enumerate(first + rest):
        if k < len(first):
            dl = deadline if floor is None else floor
        else:
            dl = deadline.share(1.0 / max(1, len(first) + len(rest) - k))
        if k == 0 and dl.left() < FIRST_SECONDS:
            # the cheapest answers even when imports or a loaded machine took
            # the time: never an empty answer where a heuristic places jobs
            load_now = get_solver(name).solve         # its module imported first
            del load_now
            dl = Deadline.after(FIRST_SECONDS)
        if dl.expired():
            if k < len(first):
                continue
            break
        info = get_solver(name)
        try:
            sol = info.solve(problem, deadline=dl, seed=seed,
                             **validate_options(name, info.options, {}))
        except Exception:  # a heuristic failing must not sink the exact solver
            continue
        # only the pending jobs: a solver that handles live state itself
        # (hived) returns the running jobs too, which stay where they are
        assign = in_order(problem, {j: a for j, a in sol.assign.items()
                                    if j not in problem.fixed})
        t = time.perf_counter()
        if not check_assign(problem, assign):
            continue
        v = true_value(problem, assign)
        if timing is not None and len(assign) >= timing.get("answer_jobs", 0):
            timing.update(answer_s=time.perf_counter() - t, answer_jobs=len(assign))
        values[name] = v
        sols.append(assign)
        if v > best_v + 1e-12:
            best, best_v = dict(assign), v
    # local search as registered (from greedy-upgrade), then from the best,
    # like the first heuristics up to the floor
    from ..greedy.improve import local_search
    starts = [("local-search", None)] + ([("local-search from the best", best)] if best else [])
    from ...registry import solvers
    applies = need <= solvers()["local-search"].capabilities
    starts = starts if local and applies else []
    for k, (label, start) in enumerate(starts):
        dl = deadline if not deadline.expired() or floor is None or not local_floor else floor
        if dl.expired():
            break
        ls = in_order(problem, local_search(problem, start,
                                            deadline=dl.share(1.0 / (len(starts) - k)), seed=seed))
        if check_assign(problem, ls):
            v = true_value(problem, ls)
            values[label] = v
            sols.append(ls)
            if v > best_v + 1e-12:
                best, best_v = ls, v
    return best, best_v, sols, values


class ExactRun:
    """One run of the driver (see the module notes)."""

    def __init__(self, problem: Problem, engine: Backend, deadline: Deadline, seed: int,
                 warm_share: float, cg_share: float):
        self.p, self.engine, self.deadline, self.seed = problem, engine, deadline, seed
        self.t0 = time.perf_counter()
        self.total = deadline.left()
        self.warm_share, self.cg_share = warm_share, cg_share
        self.stats: dict = {"engine": engine.name}
        self.best: dict = {}
        self.best_v = 0.0
        self.src = "warm start"
        self.bounds: list[float] = []
        self.step = problem.objective.step(problem.cluster, [problem.jobs[j] for j in problem.pending])
        self.stats["objective_step"] = self.step
        #: the model's preferred-level terms at most (0: none; `Aggregate.pref_slack`)
        self.slack = 0.0
        self.best_climbs = 0
        #: the model's own bounds (its preferred-level terms included)
        self.model_bounds: list[float] = []
        self.cg = CGResult()
        self.hint: tuple[dict, dict] | None = None
        self.decode_s = 0.0     # seconds the rounding's answer took to decode and check
        self.no_engine = False  # no engine imported in time (`Backend.ready`): no model

    def at(self, share: float) -> Deadline:
        """The deadline ``share`` of the whole budget after the start."""
        return self.deadline.until(self.t0 + share * self.total)

    @property
    def bound(self) -> float | None:
        """The smallest valid bound so far (pending jobs only)."""
        return min(self.bounds) if self.bounds else None

    def proven(self) -> bool:
        """True when the best value meets the rounded bound (proven)."""
        b = self.bound
        return b is not None and self.best_v >= rounded(b, self.step) - 1e-6 * max(1.0, abs(b))

    def climbs_floor(self) -> int:
        """Levels the preferred jobs climb at least in an answer of the best
        value: ``(best value - model bound) / weight``, rounded up."""
        if not self.slack or not self.model_bounds:
            return 0
        w = self.agg.pref_weight
        return max(0, math.ceil((self.best_v - min(self.model_bounds)) / w - 1e-6))

    def done(self) -> bool:
        """True when the best value is proven and, with preferred levels, no
        answer of that value climbs fewer levels -- or half the budget is
        spent looking for one (`PREFERRED_SHARE`)."""
        if not self.proven():
            return False
        if not self.slack or self.best_climbs <= self.climbs_floor():
            return True
        return time.perf_counter() - self.t0 > PREFERRED_SHARE * self.total

    def capped(self, dl: Deadline) -> Deadline:
        """``dl``, ending by `PREFERRED_SHARE` of the budget when the value is
        proven and only fewer levels climbed are sought."""
        if self.slack and self.proven():
            return dl.until(min(dl.end, self.t0 + PREFERRED_SHARE * self.total))
        return dl

    def add_model_bound(self, b: float, key: str | None = None) -> None:
        """A bound of the model: kept, and (plus the most its preferred-level
        terms take off) a bound of the objective."""
        self.model_bounds.append(b)
        self.bounds.append(b + self.slack)
        if key:
            self.stats[key] = min(b + self.slack, self.stats.get(key, b + self.slack))

    @property
    def model_step(self) -> float | None:
        """The step of the model's values: the objective's, None when the
        model has preferred-level terms (its values are no step's multiples)."""
        return None if self.slack else self.step

    def model_value(self) -> float:
        """The best answer's value in the model (less its levels climbed)."""
        return self.best_v - self.agg.pref_weight * self.best_climbs if self.slack else self.best_v

    def offer(self, assign: dict, src: str, key: str | None = None) -> None:
        """Keep ``assign`` when it is valid and better: a higher value, or
        (with preferred levels) the same value and fewer levels climbed
        (under the order's promise, `in_order` first)."""
        assign = in_order(self.p, assign)
        if not check_assign(self.p, assign):
            self.stats[f"{src}_decode_error"] = True
            return
        v = true_value(self.p, assign)
        if key:
            self.stats[key] = v
        if v > self.best_v + 1e-9:
            self.best, self.best_v, self.src = assign, v, src
            if self.slack:
                self.best_climbs = climbs(self.p, assign)
        elif self.slack and v >= self.best_v - 1e-9:
            c = climbs(self.p, assign)
            if c < self.best_climbs:
                self.best, self.best_v, self.src, self.best_climbs = assign, v, src, c

    def seed_columns(self, assign):
        """Add a solution's patterns to the pool; returns its columns."""
        cols = solution_to_columns(self.agg, assign)
        if cols is not None:
            for pat in cols[0].values():
                self.master.add(pat)
        return cols

    # ------------------------------------------------------------- phases
    def warm(self) -> list:
        """Phase 1: the warm start; returns the heuristic solutions that seed
        the pool: those worth at least `SEED_SHARE` of the best."""
        timing: dict = {}
        best, v, sols, values = warm_start(self.p, self.at(self.warm_share), self.seed,
                                           floor=self.at(max(self.warm_share, WARM_FLOOR)),
                                           local_floor=False, timing=timing)
        self.best, self.best_v = best, v
        if self.slack and best:
            self.best_climbs = climbs(self.p, best)
        engine = self.engine.ready(self.deadline, self.stats, settle=self.p.reserve_s)
        self.no_engine = engine is None
        self.engine = engine or self.engine
        if self.no_engine:
            self.stats["model"] = "left out: no engine imported in time"
        self.keep_back_final(timing)
        self.stats.update(warm_start=v, t_warm=time.perf_counter() - self.t0, heuristics=values)
        # values and solutions are recorded together, in the same order
        return [a for a, w in zip(sols, values.values()) if w >= SEED_SHARE * v]

    def keep_back_final(self, timing: dict) -> None:
        """Keep back what the answer's placements and final check will take
        beyond what the call already keeps back for them
        (`alloc.solve.check_reserve`, carried as the problem's
        ``reserve_s``), at most `FINAL_SHARE` of the budget:
        `FINAL_PER_ANSWER` times what checking and valuing one heuristic
        answer took here, per job -- a measure of this machine's speed now,
        load included -- and at least `FINAL_PER_UNIT` per job, GPU and
        server.  Not in a loop round whose last answer passed the check (its
        check examines what changed; the call's reserve follows that)."""
        n = timing.get("answer_jobs", 0)
        carry, p = self.p.carry, self.p
        if not n or (carry is not None and carry.checked is not None):
            return
        est = max(FINAL_PER_ANSWER * timing["answer_s"] * p.J / n,
                  FINAL_PER_UNIT * (p.J + p.G + p.S))
        self.stats["final_estimate_s"] = est
        extra = min(est - p.reserve_s, FINAL_SHARE * self.total)
        if extra > 0:
            self.deadline = self.deadline.reserve(extra)

    def plan(self) -> bool:
        """Phase 0: the aggregate's classes and types, and whether its items
        can be built in half the time (else the model is left out)."""
        self.bounds.append(sum(self.p.upper_coef(j) for j in self.p.pending))
        try:
            self.agg = Aggregate(self.p, deadline=self.deadline.share(0.25), items=False)
        except OutOfTime:
            self.stats["model"] = "left out: the aggregate's classes took a quarter of the time"
            return False
        self.slack = self.agg.pref_slack
        if self.slack:
            self.stats["preferred_weight"] = self.agg.pref_weight
        if self.agg.coarse:
            self.stats["topology_model"] = "coarse: one mode per job type (MODE_DOMAINS)"
        # the count stops past what half the time left can build
        cap = 0.5 * self.deadline.left() / SECONDS_PER_ITEM
        n = self.agg.estimate_items(cap=cap)
        est = n * SECONDS_PER_ITEM
        self.stats["items_estimate"] = n
        if n > cap:
            self.stats["model"] = (f"left out: its items would take {est:.1f} s or more of "
                                   f"{self.deadline.left():.1f} s")
            return False
        return True

    def heuristics_only(self) -> None:
        """Without the model: local search as registered (the strongest
        heuristic at scale, still improving when its time ends) with three
        quarters of the time, every other applicable heuristic with most of
        what is left, local search from the best with the rest."""
        from ..greedy.improve import local_search
        ls = local_search(self.p, None, deadline=self.deadline.share(0.75), seed=self.seed)
        self.offer(ls, "local-search", "ls_value")
        best, v, _, values = warm_start(self.p, self.deadline.share(0.8), self.seed,
                                        floor=self.deadline.share(0.8), local=False)
        if "ls_value" in self.stats:
            values["local-search"] = self.stats.pop("ls_value")
        self.offer(best, "warm start")
        self.stats.update(warm_start=v, heuristics=values)
        self.polish(0.9)

    def aggregate(self, sols) -> bool:
        """Phase 2: aggregation, the simple bounds and the seeded pool; False
        when the aggregate is not built in time (the warm start stands)."""
        try:
            self.agg.build_items(self.deadline.reserve(0.05 * self.total))
        except OutOfTime:
            self.stats["timed_out"] = "aggregate"
            return False
        agg = self.agg
        self.stats.update(types=len(agg.types), classes=agg.K,
                          items=sum(len(x) for x in agg.items), exact_units=agg.exact_units)
        self.add_model_bound(item_bound(agg), "item_bound")
        bm = big_machine_bound(agg, deadline=self.deadline.share(0.75))
        if bm is not None:
            self.add_model_bound(bm, "lp_bound")
        self.master = Master(agg)
        carried = carried_patterns(agg, self.deadline.share(0.1))
        self.stats["carried_columns"] = n = sum(self.master.add(pat) for pat in carried)
        # with the last round's columns, the best heuristic's (below) suffice
        for sol in (sols if n < CARRIED_ENOUGH else ()):
            self.seed_columns(sol)
        self.warm_cols = self.seed_columns(self.best) if self.best else None
        return True

    def colgen(self, until: float | None = None) -> None:
        """Phase 3: column generation (up to ``until`` of the budget, default
        the warm start's and column generation's shares) and its Lagrangian
        bound."""
        if self.done() or self.deadline.left() < 0.05:
            return
        until = self.warm_share + self.cg_share if until is None else until
        rounds, calls = self.stats.get("cg_rounds", 0), self.stats.get("pricing_calls", 0)
        self.cg = cg = column_generation(self.master, self.engine, self.at(until))
        self.stats.update(t_cg=time.perf_counter() - self.t0, cg_rounds=rounds + cg.rounds,
                          cg_converged=cg.converged, cg_lp=cg.lp, columns=self.master.size,
                          pricing_calls=calls + cg.pricing_calls)
        if cg.bound is not None and self.agg.exact_units:
            self.add_model_bound(cg.bound, "cg_bound")

    def more_columns(self) -> None:
        """Phase 3c, when column generation has not converged (or had no time
        left after a slow warm start): more of it, to
        `MORE_COLUMNS_UNTIL` of the budget, and the LP rounded down again
        when it rose (the rounding, not the integer master, finds the
        solutions of masters with thousands of servers per class)."""
        if self.cg.converged or self.done():
            return
        lp = self.cg.lp
        self.colgen(MORE_COLUMNS_UNTIL)
        if self.cg.lp is not None and (lp is None or self.cg.lp > lp + 1e-9 * max(1.0, abs(lp))):
            self.rounding()

    def rounding(self) -> None:
        """Phase 3b: the restricted LP rounded down, the residual integer
        master within a tenth of the time (`round_down`)."""
        if self.cg.lp is None or self.done() or self.deadline.left() < 0.1:
            return
        budget = min(0.1 * self.total, 0.5 * self.deadline.left())
        rd = round_down(self.master, self.engine, self.cg, self.deadline.within(budget),
                        self.seed, self.stats)
        self.stats["t_round"] = time.perf_counter() - self.t0
        if rd is not None:
            before, t = self.best_v, time.perf_counter()
            self.offer(decode(self.agg, rd.z, self.master.pool, rd.x), "rounding", "round_value")
            self.decode_s = max(self.decode_s, time.perf_counter() - t)
            if self.best_v > before:
                self.hint = (rd.z, rd.x)

    def master_ip(self) -> None:
        """Phase 4: the integer master over the pool, hinted with the best
        solution (the rounding's when it leads, else the warm start's)."""
        if self.done() or self.deadline.left() < 0.05 or not self.master.size:
            return
        hz, hx = hint_from(self.master, self.warm_cols) if self.warm_cols else (None, None)
        if self.hint is not None and self.src == "rounding":
            hz, hx = self.hint
        # the answer's decoding and check kept back (as long again as the
        # rounding's took: seconds at 100k jobs); converged: a short run (the
        # enumeration is the proof engine)
        dl = self.deadline.reserve(2.0 * self.decode_s)
        left = dl.left()
        budget = min(0.4 * left, 0.1 * self.total) if self.cg.converged else 0.9 * left
        if self.cg.converged and self.src == "rounding":
            budget = 0.8 * left     # the rounding left a gap: most of it for the master
        st, z, x, obj, _, ipstats = solve_master_ip(self.master, self.engine,
                                                    dl.within(budget), self.seed, hz, hx)
        self.stats["master_status"] = st.value
        self.stats.update({f"master_{k}": v for k, v in ipstats.items()})
        if z is not None:
            self.offer(decode(self.agg, z, self.master.pool, x), "master", "master_value")
        self.stats["t_master"] = time.perf_counter() - self.t0

    def proof(self) -> None:
        """Phase 5: the reduced-cost enumeration against descending targets."""
        if self.done() or not self.cg.converged or self.deadline.left() < 0.1:
            return
        cols = self.seed_columns(self.best)
        z, x, _, pool, enum_bound = enumerate_and_solve(
            self.master, self.engine, self.cg, self.model_value(),
            self.capped(self.deadline.reserve(0.15 * self.total)), self.seed, self.stats,
            hint=cols, delta=self.model_step,
            top=tighten(self.bound, self.step) if not self.slack else None,
            ip_deadline=self.capped(self.deadline.reserve(0.05 * self.total)))
        self.stats["t_enum"] = time.perf_counter() - self.t0
        if z is not None:
            self.offer(decode(self.agg, z, pool, x), "enumeration")
        if enum_bound is not None and self.agg.exact_units:
            if self.slack:
                self.add_model_bound(max(enum_bound, self.model_value()))
            else:
                self.bounds.append(max(enum_bound, self.best_v))

    def dive(self) -> None:
        """Phase 6: price-and-dive towards the rounded bound."""
        if self.cg.lp is None or self.done() or self.deadline.left() < 0.1:
            return
        mv = self.model_value()
        target = mv + (self.model_step or 1e-6 * max(1.0, abs(mv)))
        goal = tighten(self.bound, self.step) if not self.slack else self.bound
        dv = dive(self.master, self.engine, self.capped(self.deadline.share(0.5)), target,
                  self.model_step, self.stats, goal=goal, width=2)
        self.stats["t_dive"] = time.perf_counter() - self.t0
        if dv is not None:
            self.stats["dive_value"] = dv.value
            self.offer(decode(self.agg, dv.z, self.master.pool, dv.x), "dive", "dive_true")

    def polish(self, share: float = 0.5) -> None:
        """Phase 7: local search from the best solution with ``share`` of
        what is left -- when that is more than twice what setting it up
        (linear in the jobs, like decoding an answer) and checking its answer
        take."""
        left = self.deadline.left()
        if left < 0.05 or left * share < 2.0 * self.decode_s or self.done():
            return
        from ..greedy.improve import local_search
        self.offer(local_search(self.p, self.best, deadline=self.deadline.share(share),
                                seed=self.seed), "polish")

    def keep(self) -> None:
        """In a scheduler loop, keep the pool's patterns for the next round
        (`alloc.engines.configuration.carried`), the last LP's
        columns first (a few milliseconds, also when the time is up: the
        call's reserve covers them)."""
        if self.p.carry is None:
            return
        used = [k for k, v in self.cg.zv.items() if self.cg.primal[v] > 1e-9] \
            if self.cg.primal else []
        keep_patterns(self.agg, self.master.pool, used)

    def solution(self) -> Solution:
        """The Solution: best assignment, status and bound (running jobs' value
        added); preferred jobs moved into one node of their level where one
        holds them (`alloc.engines.greedy.compact.compacted`)."""
        if self.best:
            before = self.best
            self.best = compacted(self.p, self.best, self.deadline)
            if self.best is not before:
                self.best_v = true_value(self.p, self.best)
        if any(self.p.jobs[j].preferred is not None for j in self.best):
            self.stats["preferred_climbs"] = c = climbs(self.p, self.best)
            if self.slack:
                self.stats["preferred_climbs_floor"] = min(c, self.climbs_floor())
        bound = self.bound
        fixed = fixed_value(self.p)
        if bound is not None:
            bound = rounded(bound, self.step)
            if self.proven():
                bound = max(bound, self.best_v)
            self.stats["gap"] = max(0.0, (bound - self.best_v) / max(abs(bound), 1e-9))
            bound += fixed
        status = Status.OPTIMAL if self.proven() else Status.FEASIBLE
        self.stats.update(source=self.src, time_s=time.perf_counter() - self.t0)
        return Solution(self.best, status, bound, (), self.stats)


def fixed_value(problem: Problem) -> float:
    """The running jobs' value (added to every bound).  In a scheduler loop
    (a problem compiled with a carry) each running job's value is kept
    across rounds, by the job object (frozen: the same object, the same
    placement, the same value on the same cluster and objective), so a round
    computes it only for the jobs started since (3,600 values took 30-80 ms
    of a 1 s round)."""
    carry = problem.carry
    if carry is None:
        return sum(problem.value_of(j, a) for j, a in problem.fixed.items())
    cluster, objective = problem.cluster, problem.objective.name
    kept = carry.take(FIXED_VALUES)
    old = kept[2] if kept is not None and kept[0] is cluster and kept[1] == objective else {}
    new, total, jobs = {}, 0.0, problem.jobs
    for j, a in problem.fixed.items():
        job = jobs[j]
        hit = old.get(id(job))
        v = hit[1] if hit is not None and hit[0] is job else problem.value_of(j, a)
        new[id(job)] = (job, v)
        total += v
    carry.keep(FIXED_VALUES, (cluster, objective, new))
    return total


#: The carry's key for the running jobs' values (`fixed_value`).
FIXED_VALUES = "exact: running jobs' values"


def solve_exact(problem: Problem, engine: Backend, *, deadline: Deadline, seed: int = 0,
                warm_share: float = 0.15, cg_share: float = 0.45) -> Solution:
    """The driver (see the module notes) on ``problem`` with ``engine``,
    with the cyclic garbage collector paused (`alloc.collector.paused`).

    The driver's objects -- the aggregate's items, the pool, the models --
    live through the call and die at its end; with the collector running,
    every collection of the young generations in between walks them and
    moves them to the old generation, whose full collections then walk the
    whole heap (a scheduler loop's jobs and placements included): 80-120 ms
    a round in a 1,000-server loop with 1 s rounds.  They hold no reference
    cycles (the engines' models are built without them,
    `alloc.kernel.cpsat`), so reference counting frees them; the little
    cyclic garbage of the call waits for the next collection after it."""
    with paused():
        return _solve_exact(problem, engine, deadline, seed, warm_share, cg_share)


def _solve_exact(problem: Problem, engine: Backend, deadline: Deadline, seed: int,
                 warm_share: float, cg_share: float) -> Solution:
    run = ExactRun(problem, engine, deadline, seed, warm_share, cg_share)
    if not problem.pending:
        run.bounds.append(0.0)
        return run.solution()
    if not run.plan():
        run.heuristics_only()
        return run.solution()
    sols = run.warm()
    if run.no_engine:
        run.polish(0.9)
        return run.solution()
    if not run.aggregate(sols):
        run.polish()
        return run.solution()
    for phase in (run.colgen, run.rounding, run.more_columns, run.master_ip, run.proof,
                  run.dive, run.polish):
        phase()
    run.keep()
    return run.solution()


__all__ = ["ExactRun", "fixed_value", "solve_exact", "warm_heuristics", "warm_start"]
