"""alloc beside a scheduler's environment: without OR-Tools (and without
pandas) alloc imports and every solver that needs no CP-SAT runs -- the
heuristics, milp, hived, a session with preemption by order, the Blox
adapter; cpsat then says in one line how to install it, and an adapter given
cpsat fails when it is made, not in the scheduler's first round.  The
distribution's name is not the index's other ``alloc``."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WITHOUT = r"""
import importlib.abc, sys
class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("ortools", "pandas"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Absent())
from types import SimpleNamespace
import alloc
from alloc import Cluster, Job, Server, Session, SolverUnavailable, allocate
from alloc.registry import solvers
from alloc.adapters.blox import AllocPlacement
from alloc.adapters.scontrol import Scontrol
from alloc.adapters.slurm import Controller
cl = Cluster(tuple(Server(f"s{i}", 32000, 256000, 4, "V100") for i in range(3)))
jobs = [Job(f"j{k}", 1 + k % 3, cpu=1000, mem=1000) for k in range(8)]
for name, info in solvers().items():
    if info.available:
        allocate(cl, jobs, solver=name, time_limit=5)
why = solvers()["cpsat"].unavailable_reason()
assert "pip install" in why and "\n" not in why, why
try:
    allocate(cl, jobs, solver="cpsat")
    raise SystemExit("cpsat ran without ortools")
except SolverUnavailable as exc:
    assert "pip install" in str(exc) and "\n" not in str(exc)
s = Session(cl, solver="best-fit", preempt="order")
for j in jobs:
    s.submit(j)
s.step()
s.submit(Job("hot", 4, cpu=1000, mem=1000, locality="server"))
s.set_order(["hot"] + [j.id for j in jobs])
assert s.step().stop
rows = [{"GPU_ID": g, "Node_ID": g // 4, "Local_GPU_ID": g % 4, "IN_USE": False,
         "JOB_IDS": None} for g in range(8)]
stop, launch = AllocPlacement(solver="milp").place(
    SimpleNamespace(active_jobs={0: {"num_GPUs": 2, "is_running": False}}),
    SimpleNamespace(server_map={}, gpu_df=rows), {"job_order": [0]})
assert list(launch) == [0]
for make in (lambda: AllocPlacement(solver="cpsat"),          # fails when made, not in a round
             lambda: Controller(Scontrol(), solver="cpsat")):
    try:
        make()
        raise SystemExit("an adapter was made with a solver that cannot run")
    except SolverUnavailable as exc:
        assert "pip install" in str(exc) and "\n" not in str(exc)
assert "ortools" not in sys.modules and "pandas" not in sys.modules
print(sorted(n for n, i in solvers().items() if not i.available))
"""


def test_everything_but_cp_sat_runs_without_ortools_and_pandas():
    out = subprocess.run([sys.executable, "-c", WITHOUT], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "cpsat" in out.stdout and "milp" not in out.stdout


def test_the_distribution_is_not_the_other_alloc():
    import tomllib
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert doc["project"]["name"] == "alloc-gpu"
    floor = [r for r in doc["project"]["dependencies"] if r.startswith("ortools")]
    assert floor and floor[0].split("#")[0].strip() == "ortools>=9.7", floor
    # OR-Tools 9.7's cp_model imports pandas without declaring it
    assert any(r.split("#")[0].strip() == "pandas>=1.5" for r in doc["project"]["dependencies"])
    readme = (ROOT / "README.md").read_text()
    assert "alloc-gpu" in readme and "`pip install alloc` installs" in readme
    blox = (ROOT / "docs" / "blox.md").read_text()
    assert "--no-deps alloc" not in blox and "alloc-gpu" in blox and "pip check" in blox


def test_every_adapter_refuses_a_solver_that_cannot_run_when_it_is_made(monkeypatch):
    """Blox's policy, the Slurm controller and the Kubernetes scheduler check
    their solver when they are made (here: cpsat said to be missing)."""
    import pytest
    from alloc import SolverUnavailable
    from alloc.adapters.blox import AllocPlacement
    from alloc.adapters.scontrol import Scontrol
    from alloc.adapters.slurm import Controller
    from alloc.registry import solvers
    info = solvers()["cpsat"]
    monkeypatch.setattr(type(info), "unavailable_reason",
                        lambda self: "needs ortools, which is not installed: pip install x"
                        if self.name == "cpsat" else None)
    makers = [lambda: AllocPlacement(solver="cpsat"),
              lambda: Controller(Scontrol(), solver="cpsat")]
    try:
        from alloc.adapters.kubernetes.scheduler import Scheduler
        makers.append(lambda: Scheduler(None, solver="cpsat"))
    except ImportError:
        pass
    for make in makers:
        with pytest.raises(SolverUnavailable, match="pip install"):
            make()
