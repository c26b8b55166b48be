r"""A Slurm on one machine: one ``slurmctld`` and several ``slurmd`` on
loopback, GPUs as GRES backed by stand-in files -- for tests, benchmarks and
trying `alloc slurm` without a cluster.

Needs Debian's ``slurmctld``, ``slurmd`` and ``slurm-client`` (22.05 or
later) and root (``SlurmUser=root``; ``auth/none``, so nothing else on the
machine is trusted or needed).  Everything lives in one directory:
``slurm.conf``, ``gres.conf``, ``topology.conf``, state, spool, logs and the
GPU files; the ports are free ones found at start.

Examples
--------
```python
from alloc.adapters.loopback import Loopback
with Loopback(nodes=4, gpus=8) as slurm:      # started, nodes resumed
    print(slurm.env["SLURM_CONF"])
```
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

#: The Debian packages the loopback Slurm needs.
PACKAGES = ("slurmctld", "slurmd", "slurm-client")


def missing() -> str | None:
    """Why a loopback Slurm cannot start here, or None."""
    for exe in ("slurmctld", "slurmd", "scontrol", "sbatch"):
        if shutil.which(exe) is None and not Path(f"/usr/sbin/{exe}").exists():
            return f"{exe} is not installed (apt-get install -y {' '.join(PACKAGES)})"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "the loopback Slurm runs its daemons as root"
    return None


def _free_ports(n: int) -> list[int]:
    socks, out = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        out.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return out


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class Loopback:
    """One ``slurmctld`` and ``nodes`` ``slurmd`` (``gpu001``...) on loopback.

    Parameters
    ----------
    nodes, gpus, cpus, memory : int
        Nodes, GPUs per node (``Gres=gpu:<gpu_type>:gpus``), CPUs per node,
        ``RealMemory`` per node (MiB).
    gpu_type : str
        The GRES type.
    shapes : sequence of (int, str), optional
        Per node, its GPUs and their GRES type (a cluster of mixed node
        shapes, e.g. three ``(8, "v100")`` and one ``(4, "a100")``); it
        overrides ``nodes``, ``gpus`` and ``gpu_type``.
    switches : int
        Leaf switches of ``topology.conf`` (nodes split evenly), under one root.
    directory : path, optional
        Where everything lives (default: a new temporary directory, removed by
        `stop`).
    """

    def __init__(self, nodes: int = 4, gpus: int = 8, cpus: int = 96, memory: int = 500000,
                 gpu_type: str = "v100", switches: int = 2, directory=None, shapes=None):
        shapes = [(int(g), str(t)) for g, t in shapes] if shapes else [(gpus, gpu_type)] * nodes
        self.nodes = [f"gpu{k:03d}" for k in range(1, len(shapes) + 1)]
        #: node -> (GPUs, GRES type)
        self.shapes = dict(zip(self.nodes, shapes))
        self.gpus, self.cpus, self.memory, self.gpu_type = gpus, cpus, memory, gpu_type
        self.switches = max(1, min(switches, len(self.nodes)))
        self._own = directory is None
        self.dir = Path(directory or tempfile.mkdtemp(prefix="alloc-slurm-"))
        self.conf = self.dir / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.procs: list[subprocess.Popen] = []

    # ---------------------------------------------------------------- files
    def write(self) -> None:
        """Write the configuration files and the directories they name."""
        d = self.dir
        for sub in ("state", "spool", "log", "dev"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        for n in self.nodes:
            (d / "spool" / n).mkdir(exist_ok=True)
        for k in range(max(g for g, _ in self.shapes.values())):
            (d / "dev" / f"gpu{k}").touch()
        ctl, *ports = _free_ports(1 + len(self.nodes))
        self.port = ctl
        host = socket.gethostname()
        lines = [
            "ClusterName=alloc", f"SlurmctldHost={host}(127.0.0.1)", f"SlurmctldPort={ctl}",
            "AuthType=auth/none", "CredType=cred/none", "SlurmUser=root", "SlurmdUser=root",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "MpiDefault=none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
            "GresTypes=gpu", "SlurmdParameters=config_overrides", "TopologyPlugin=topology/tree",
            "SchedulerType=sched/builtin", "SchedulerParameters=sched_min_interval=0",
            "AuthInfo=cred_expire=5", "JobRequeue=1", "ReturnToService=2",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            "JobAcctGatherType=jobacct_gather/none", "KillWait=1", "MinJobAge=600",
            "InactiveLimit=0", "SlurmctldTimeout=30", "SlurmdTimeout=30",
            f"StateSaveLocation={d / 'state'}", f"SlurmdSpoolDir={d / 'spool'}/%n",
            f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmdPidFile={d / 'slurmd'}.%n.pid",
            f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={d / 'log'}/slurmd.%n.log", "SlurmctldDebug=info",
            "SlurmdDebug=info",
        ]
        for n, port in zip(self.nodes, ports):
            g, t = self.shapes[n]
            lines.append(f"NodeName={n} NodeAddr=127.0.0.1 NodeHostname={host} Port={port} "
                         f"CPUs={self.cpus} RealMemory={self.memory} "
                         f"Gres=gpu:{t}:{g} State=UNKNOWN")
        lines.append(f"PartitionName=gpu Nodes={','.join(self.nodes)} Default=YES "
                     f"MaxTime=INFINITE State=UP OverSubscribe=NO")
        self.conf.write_text("\n".join(lines) + "\n")
        gres = []
        for n in self.nodes:
            g, t = self.shapes[n]
            files = f"{d / 'dev'}/gpu[0-{g - 1}]" if g > 1 else f"{d / 'dev'}/gpu0"
            gres.append(f"NodeName={n} Name=gpu Type={t} File={files}")
        (d / "gres.conf").write_text("\n".join(gres) + "\n")
        per = -(-len(self.nodes) // self.switches)
        topo = []
        for k in range(self.switches):
            members = self.nodes[k * per:(k + 1) * per]
            if members:
                topo.append(f"SwitchName=leaf{k} Nodes={','.join(members)}")
        topo.append(f"SwitchName=root Switches=leaf[0-{self.switches - 1}]"
                    if self.switches > 1 else "SwitchName=root Switches=leaf0")
        (d / "topology.conf").write_text("\n".join(topo) + "\n")

    # ------------------------------------------------------------ processes
    def start(self, timeout: float = 60.0) -> "Loopback":
        """Start the daemons and wait until every node is idle."""
        why = missing()
        if why:
            raise RuntimeError(why)
        self.write()
        log = open(self.dir / "log" / "daemons.out", "ab")
        self.procs.append(subprocess.Popen([_exe("slurmctld"), "-D", "-c", "-f", str(self.conf)],
                                           env=self.env, stdout=log, stderr=log))
        self._wait(lambda: self.scontrol("ping").returncode == 0, timeout, "slurmctld")
        for n in self.nodes:
            self.procs.append(subprocess.Popen(
                [_exe("slurmd"), "-D", "-c", "-N", n, "-f", str(self.conf)],
                env=self.env, stdout=log, stderr=log))
        names = ",".join(self.nodes)

        def ready():
            out = self.scontrol("show", "nodes", "--oneliner").stdout
            states = [x.split("State=", 1)[1].split()[0] for x in out.splitlines()
                      if "State=" in x]
            if len(states) == len(self.nodes) and all(s.startswith("IDLE") for s in states):
                return True
            if any("DOWN" in s or "DRAIN" in s for s in states):
                self.scontrol("update", f"NodeName={names}", "State=RESUME")
            return False
        self._wait(ready, timeout, "the slurmd nodes")
        return self

    def scontrol(self, *args: str) -> subprocess.CompletedProcess:
        """Run ``scontrol`` against this Slurm."""
        return subprocess.run(["scontrol", *args], env=self.env, capture_output=True,
                              text=True, timeout=30)

    def sbatch(self, *args: str) -> int:
        """Submit a batch job (``sbatch --parsable ...``); returns its id."""
        out = subprocess.run(["sbatch", "--parsable", *args], env=self.env,
                             capture_output=True, text=True, timeout=30, cwd=self.dir)
        if out.returncode:
            raise RuntimeError(f"sbatch failed: {out.stderr.strip()}")
        return int(out.stdout.strip().split(";")[0])

    def _wait(self, ok, timeout: float, what: str) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(p.poll() is not None for p in self.procs):
                break
            if ok():
                return
            time.sleep(0.3)
        tail = ""
        logf = self.dir / "log" / "slurmctld.log"
        if logf.exists():
            tail = " | ".join(logf.read_text(errors="replace").splitlines()[-5:])
        self.stop()
        raise RuntimeError(f"{what} did not come up within {timeout:.0f} s: {tail}")

    def stop(self) -> None:
        """Cancel this Slurm's jobs (so that no job step outlives its slurmd),
        stop the daemons this object started and remove its own directory."""
        if self.procs and all(p.poll() is None for p in self.procs):
            self._cancel_all()
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []
        if self._own:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _cancel_all(self, timeout: float = 15.0) -> None:
        def ids():
            out = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env,
                                 capture_output=True, text=True, timeout=30)
            return out.stdout.split() if out.returncode == 0 else []
        try:
            jobs = ids()
            if jobs:
                subprocess.run(["scancel", *jobs], env=self.env, capture_output=True,
                               timeout=30)
            end = time.monotonic() + timeout
            while jobs and time.monotonic() < end:
                time.sleep(0.3)
                jobs = ids()
        except (OSError, subprocess.TimeoutExpired):
            pass

    def __enter__(self) -> "Loopback":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = ["Loopback", "PACKAGES", "missing"]
