"""What ``alloc validate`` reports about an instance file: every problem, the
input warnings, the jobs that cannot be placed now, and one summary line
(size, the capabilities the instance needs, the solvers that take it)."""
from __future__ import annotations

from .errors import InputError
from .io import load_instance
from .problem import placeable_reason
from .registry import solvers
from .solve import needed_capabilities
from .validate import model_warnings


def instance_report(path) -> tuple[list[str], dict]:
    """What `alloc validate` says about an instance file.

    Returns
    -------
    (list of str, dict)
        Every problem found (field path first; empty when the file is
        valid), and `{"warnings": [...], "summary": "..."}`: the input
        warnings, the jobs that cannot be placed on this cluster now, and one
        line with the size, the capabilities the instance needs and the
        solvers that take it.

    Notes
    -----
    Problems are found in stages: the file and its JSON Schema; then the
    cluster; its tenants; the jobs.  Each stage lists every problem it finds;
    a later stage runs once the earlier ones pass, since its checks need them
    (a job's locality is checked against valid cluster levels).
    """
    try:
        inst = load_instance(path)
    except InputError as exc:
        lead = f"{path}: "
        return [p[len(lead):] if p.startswith(lead) else p for p in exc.problems], \
            {"warnings": [], "summary": ""}
    c, jobs = inst.cluster, inst.jobs
    notes = model_warnings(c, jobs)
    notes += [f"job {j.id!r} cannot be placed on this cluster now: {why}" for j in jobs
              if j.current is None and (why := placeable_reason(c, j))]
    need = needed_capabilities(c, jobs)
    able = [n for n, s in solvers().items() if need <= s.capabilities and s.available]
    running = sum(j.current is not None for j in jobs)
    summary = (f"{len(jobs)} jobs ({running} running) on {len(c.servers)} servers with "
               f"{c.total_gpus} GPUs; needs {', '.join(sorted(need)) or 'no capability'}; "
               f"solvers that take it: {', '.join(able) or 'none'}")
    return [], {"warnings": notes, "summary": summary}


__all__ = ["instance_report"]
