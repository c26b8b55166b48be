#!/usr/bin/env python3
"""A real Kubernetes control plane for the tests: etcd and kube-apiserver on loopback.

Nothing here is downloaded as a binary: the three programs are built from
their Go modules through the Go module proxy, in one Go module of our own::

    require k8s.io/kubernetes vX.Y.Z
    replace k8s.io/<staging> => k8s.io/<staging> v0.Y.Z    (one line per staging module)

``kube-apiserver`` and ``kube-scheduler`` come from ``k8s.io/kubernetes``;
etcd from ``go.etcd.io/etcd/server/v3`` at the version ``k8s.io/kubernetes``
itself requires.  The binaries are cached between runs under
``${XDG_CACHE_HOME:-$HOME/.cache}/alloc-k8s/vX.Y.Z/bin`` (keyed by the
Kubernetes version), with ``build.json`` beside them: each binary's build
time (s) and the peak resident memory of the largest process of its build
(``/usr/bin/time -v``, the linker's in practice).

``start`` runs etcd (data in a temp folder) and kube-apiserver (HTTPS on
127.0.0.1 with a certificate made by ``openssl``; authentication by a token
file only; RBAC authorization; the ServiceAccount admission plugin off, as
no controller manager creates service accounts, and TaintNodesByCondition off,
as no node lifecycle controller takes the not-ready taint off new nodes) and
writes a kubeconfig.
Commands::

    controlplane.py build [--scheduler]    # build what is missing (minutes the first time)
    controlplane.py start [--build] [--scheduler]   # prints `export ALLOC_K8S_...=...` lines
    controlplane.py stop [RUN_DIR]
    controlplane.py reason                 # why the control plane cannot be built here, or nothing

``start`` exits 3 where the build is impossible (no Go toolchain of the
version needed, no openssl, the module proxy unreachable), 1 on any other
failure.

Environment: ``ALLOC_K8S_VERSION`` (default below), ``ALLOC_K8S_RUN``
(the run folder of a started control plane, where ``stop`` finds its pids).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

VERSION = os.environ.get("ALLOC_K8S_VERSION", "1.35.4")
GO_MIN = (1, 25)
ADMIN_TOKEN = "alloc-test-admin-token"
# the scheduler's own identity: a service account's user name, so that the
# ClusterRoleBinding of docs/kubernetes.md (subject: ServiceAccount) applies
SCHEDULER_USER = "system:serviceaccount:kube-system:alloc-scheduler"
SCHEDULER_TOKEN = "alloc-test-scheduler-token"
KUBE_SCHEDULER_USER = "system:kube-scheduler"
KUBE_SCHEDULER_TOKEN = "alloc-test-kube-scheduler-token"


class Impossible(RuntimeError):
    """The control plane cannot be built here (no toolchain, the module proxy unreachable)."""


def cache_dir() -> Path:
    """The folder of this version's build: ``$XDG_CACHE_HOME/alloc-k8s/vX.Y.Z``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "alloc-k8s" / f"v{VERSION}"


def binary(name: str) -> Path:
    """The path of a built program (``etcd``, ``kube-apiserver``, ``kube-scheduler``)."""
    return cache_dir() / "bin" / name


def _go() -> str | None:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    return go


def reason() -> str | None:
    """Why the control plane cannot be built or started here (one line), or None."""
    if all(binary(n).exists() for n in ("etcd", "kube-apiserver")):
        return None if shutil.which("openssl") else "openssl is missing (the API server's certificate)"
    go = _go()
    if go is None:
        return "no Go toolchain to build kube-apiserver and etcd from their modules"
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()
    m = re.match(r"go(\d+)\.(\d+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < GO_MIN:
        return f"Go {out or '?'} is older than go{GO_MIN[0]}.{GO_MIN[1]}, which k8s.io/kubernetes v{VERSION} needs"
    if not shutil.which("openssl"):
        return "openssl is missing (the API server's certificate)"
    return None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(CGO_ENABLED="0", GOFLAGS="-buildvcs=false", GOTOOLCHAIN="local")
    return env


def _run(cmd: list[str], cwd: Path, log) -> None:
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    r = subprocess.run(cmd, cwd=cwd, env=_env(), stdout=log, stderr=subprocess.STDOUT)
    if r.returncode:
        raise RuntimeError(f"`{' '.join(cmd)}` failed (exit {r.returncode}); see {log.name}")


def _prepare_module(src: Path, log) -> None:
    """Write the build module: k8s.io/kubernetes and its staging modules pinned."""
    go = _go()
    assert go
    if (src / "go.sum").exists() and "etcd/server" in (src / "go.mod").read_text():
        return
    src.mkdir(parents=True, exist_ok=True)
    (src / "go.mod").write_text("module alloc.test/k8s-control-plane\n\ngo 1.25.0\n")
    r = subprocess.run([go, "mod", "download", "-json", f"k8s.io/kubernetes@v{VERSION}"],
                       cwd=src, env=_env(), capture_output=True, text=True)
    log.write(r.stdout[-2000:] + r.stderr[-4000:])
    try:
        info = json.loads(r.stdout)
    except ValueError:
        info = {}
    if r.returncode or info.get("Error"):
        why = info.get("Error") or r.stderr or "?"
        why = "; ".join(x.strip() for x in str(why).splitlines() if x.strip())
        raise Impossible(f"go mod download k8s.io/kubernetes@v{VERSION} failed: {why}")
    kmod = Path(info["GoMod"]).read_text()
    staging = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", kmod, re.M)
    etcd = re.search(r"^\s*go\.etcd\.io/etcd/server/v3\s+(v\S+)", kmod, re.M)
    if not staging or not etcd:
        raise RuntimeError(f"k8s.io/kubernetes@v{VERSION}'s go.mod has no staging replaces or etcd server")
    minor = VERSION.split(".", 1)[1]
    lines = [f"\t{m} => {m} v0.{minor}" for m in staging]
    (src / "go.mod").write_text(
        "module alloc.test/k8s-control-plane\n\ngo 1.25.0\n\nreplace (\n" + "\n".join(lines) + "\n)\n")
    _run([go, "get", f"k8s.io/kubernetes@v{VERSION}",
          f"k8s.io/kubernetes/cmd/kube-apiserver@v{VERSION}",
          f"k8s.io/kubernetes/cmd/kube-scheduler@v{VERSION}",
          f"go.etcd.io/etcd/server/v3@{etcd.group(1)}"], src, log)


PACKAGES = {
    "etcd": "go.etcd.io/etcd/server/v3",
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
}


def build(names: tuple[str, ...] = ("etcd", "kube-apiserver")) -> dict[str, dict[str, float]]:
    """Build the programs that are missing from the cache; return build.json's figures.

    Each build runs under ``/usr/bin/time -v`` (when present): its wall time
    (s) and the largest process's peak resident memory (MiB) are kept in
    ``build.json`` beside the binaries.
    """
    why = reason()
    if why:
        raise Impossible(why)
    root = cache_dir()
    src = root / "src"
    (root / "bin").mkdir(parents=True, exist_ok=True)
    figures_path = root / "build.json"
    figures = json.loads(figures_path.read_text()) if figures_path.exists() else {}
    missing = [n for n in names if not binary(n).exists()]
    if not missing:
        return figures
    go = _go()
    assert go
    with open(root / "build.log", "a") as log:
        t0 = time.monotonic()
        _prepare_module(src, log)
        figures["module_download_s"] = figures.get("module_download_s", round(time.monotonic() - t0, 1))
        minor = VERSION.split(".")[1]
        ldflags = ("-s -w -X k8s.io/component-base/version.gitVersion=v" + VERSION
                   + " -X k8s.io/component-base/version.gitMajor=1"
                   + f" -X k8s.io/component-base/version.gitMinor={minor}")
        for name in missing:
            out = binary(name).with_suffix(".tmp")
            cmd = [go, "build", "-trimpath", "-ldflags", ldflags, "-o", str(out), PACKAGES[name]]
            timing = root / f"time-{name}.txt"
            if os.path.exists("/usr/bin/time"):
                cmd = ["/usr/bin/time", "-v", "-o", str(timing)] + cmd
            t0 = time.monotonic()
            _run(cmd, src, log)
            wall = time.monotonic() - t0
            peak = None
            if timing.exists():
                m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", timing.read_text())
                peak = round(int(m.group(1)) / 1024) if m else None
            os.replace(out, binary(name))
            figures[name] = {"build_s": round(wall, 1), "peak_rss_mib": peak}
            figures_path.write_text(json.dumps(figures, indent=1) + "\n")
    return figures


# --------------------------------------------------------------------- start / stop

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _certs(run: Path) -> None:
    """A CA and a serving certificate for 127.0.0.1, and the service-account key."""
    def ossl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=run, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
         "-days", "7", "-subj", "/CN=alloc-test-ca",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
         "-subj", "/CN=kube-apiserver")
    (run / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                 "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    ossl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.crt", "-days", "7", "-extfile", "ext.cnf")
    ossl("genrsa", "-out", "sa.key", "2048")
    ossl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")


def kubeconfig(server: str, ca: Path, token: str, user: str) -> str:
    """A kubeconfig (as JSON, which is YAML) for ``token`` on ``server``."""
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}],
    }, indent=1)


def _wait_ready(url: str, ca: Path, procs: list[subprocess.Popen], timeout: float, log: Path) -> None:
    ctx = ssl.create_default_context(cafile=str(ca))
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        for p in procs:
            if p.poll() is not None:
                tail = log.read_text()[-1500:] if log.exists() else ""
                raise RuntimeError(f"{p.args[0]} exited ({p.returncode}) while starting: {tail}")
        try:
            req = urllib.request.Request(url + "/readyz", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            with urllib.request.urlopen(req, context=ctx, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception as e:  # not up yet
            last = str(e)
        time.sleep(0.3)
    raise RuntimeError(f"kube-apiserver not ready after {timeout:.0f} s: {last}")


def start(run: Path | None = None, scheduler: bool = False) -> dict[str, str]:
    """Start etcd and kube-apiserver; return the environment that points at them.

    Returns ``ALLOC_K8S_RUN`` (the run folder), ``ALLOC_K8S_KUBECONFIG``
    (admin, group ``system:masters``), ``ALLOC_K8S_SCHEDULER_KUBECONFIG``
    (the scheduler's service-account user, no rights until the docs' RBAC is
    applied) and ``ALLOC_K8S_KUBE_SCHEDULER_KUBECONFIG`` (``system:kube-scheduler``).
    """
    for name in ("etcd", "kube-apiserver") + (("kube-scheduler",) if scheduler else ()):
        if not binary(name).exists():
            raise RuntimeError(f"{name} is not built (run `controlplane.py build`)")
    run = Path(run or tempfile.mkdtemp(prefix="alloc-k8s-"))
    run.mkdir(parents=True, exist_ok=True)
    _certs(run)
    # requests of the two schedulers' users, one line each when answered (API calls per pod)
    (run / "audit-policy.json").write_text(json.dumps({
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
        "omitStages": ["RequestReceived", "ResponseStarted"],
        "rules": [{"level": "Metadata", "users": [SCHEDULER_USER, KUBE_SCHEDULER_USER]},
                  {"level": "None"}]}))
    (run / "tokens.csv").write_text(
        f'{ADMIN_TOKEN},admin,admin,"system:masters"\n'
        f'{SCHEDULER_TOKEN},{SCHEDULER_USER},alloc-scheduler-uid,"system:serviceaccounts,system:serviceaccounts:kube-system"\n'
        f"{KUBE_SCHEDULER_TOKEN},{KUBE_SCHEDULER_USER},kube-scheduler-uid\n")
    client_port, peer_port, api_port = _free_port(), _free_port(), _free_port()
    etcd_url = f"http://127.0.0.1:{client_port}"
    log_etcd = run / "etcd.log"
    etcd = subprocess.Popen(
        [str(binary("etcd")), "--data-dir", str(run / "etcd-data"), "--name", "alloc-test",
         "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url,
         "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
         "--initial-cluster", f"alloc-test=http://127.0.0.1:{peer_port}",
         "--unsafe-no-fsync", "--quota-backend-bytes", str(2 << 30), "--log-level", "warn"],
        stdout=open(log_etcd, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    (run / "etcd.pid").write_text(str(etcd.pid))
    log_api = run / "kube-apiserver.log"
    api = subprocess.Popen(
        [str(binary("kube-apiserver")), "--etcd-servers", etcd_url,
         "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
         "--secure-port", str(api_port), "--cert-dir", str(run / "certs"),
         "--tls-cert-file", str(run / "server.crt"), "--tls-private-key-file", str(run / "server.key"),
         "--client-ca-file", str(run / "ca.crt"),
         "--token-auth-file", str(run / "tokens.csv"), "--authorization-mode", "RBAC",
         "--anonymous-auth=false",
         "--service-account-issuer", "https://kubernetes.default.svc",
         "--service-account-key-file", str(run / "sa.pub"),
         "--service-account-signing-key-file", str(run / "sa.key"),
         "--service-cluster-ip-range", "10.0.0.0/24",
         "--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
         "--endpoint-reconciler-type", "none",
         "--max-requests-inflight", "1000", "--max-mutating-requests-inflight", "500",
         "--audit-policy-file", str(run / "audit-policy.json"),
         "--audit-log-path", str(run / "audit.log"), "--audit-log-format", "json",
         "--audit-log-mode", "batch", "--audit-log-batch-max-wait", "1s",
         "--v", "1"],
        stdout=open(log_api, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    (run / "kube-apiserver.pid").write_text(str(api.pid))
    server = f"https://127.0.0.1:{api_port}"
    try:
        _wait_ready(server, run / "ca.crt", [etcd, api], 120, log_api)
    except Exception:
        stop(run)
        raise
    env = {
        "ALLOC_K8S_RUN": str(run),
        "ALLOC_K8S_KUBECONFIG": str(run / "admin.kubeconfig"),
        "ALLOC_K8S_SCHEDULER_KUBECONFIG": str(run / "scheduler.kubeconfig"),
        "ALLOC_K8S_KUBE_SCHEDULER_KUBECONFIG": str(run / "kube-scheduler.kubeconfig"),
    }
    (run / "admin.kubeconfig").write_text(kubeconfig(server, run / "ca.crt", ADMIN_TOKEN, "admin"))
    (run / "scheduler.kubeconfig").write_text(
        kubeconfig(server, run / "ca.crt", SCHEDULER_TOKEN, "alloc-scheduler"))
    (run / "kube-scheduler.kubeconfig").write_text(
        kubeconfig(server, run / "ca.crt", KUBE_SCHEDULER_TOKEN, "kube-scheduler"))
    (run / "env.json").write_text(json.dumps(env, indent=1))
    return env


def start_kube_scheduler(run: Path | str, scheduler_name: str = "default-scheduler") -> int:
    """Start kube-scheduler (default profile, no leader election) against the
    control plane of ``run``; returns its pid (``stop`` ends it)."""
    run = Path(run)
    cfg = run / "kube-scheduler-config.json"
    cfg.write_text(json.dumps({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(run / "kube-scheduler.kubeconfig"),
                             "qps": 5000, "burst": 5000},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": scheduler_name}]}))
    log = run / "kube-scheduler.log"
    p = subprocess.Popen([str(binary("kube-scheduler")), "--config", str(cfg), "--secure-port", "0",
                          "--v", "1"], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                         start_new_session=True)
    (run / "kube-scheduler.pid").write_text(str(p.pid))
    time.sleep(1.0)
    if p.poll() is not None:
        raise RuntimeError(f"kube-scheduler exited ({p.returncode}): {log.read_text()[-1500:]}")
    return p.pid


def audit_counts(run: Path | str) -> dict[str, int]:
    """Requests answered so far, by user (the two schedulers'), from the audit log."""
    out: dict[str, int] = {}
    path = Path(run) / "audit.log"
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        user = (ev.get("user") or {}).get("username", "?")
        out[user] = out.get(user, 0) + 1
    return out


def _kill(pidfile: Path, timeout: float = 15) -> None:
    if not pidfile.exists():
        return
    pid = int(pidfile.read_text())
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        pidfile.unlink()
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    pidfile.unlink(missing_ok=True)


def stop(run: Path | str | None = None, remove: bool = True) -> None:
    """Stop what ``start`` started in ``run`` (kube-apiserver first, then etcd); remove the folder."""
    given = str(run or os.environ.get("ALLOC_K8S_RUN", ""))
    if not given:                 # nothing started (Path("") would be the current folder)
        return
    run = Path(given)
    if not run.is_dir():
        return
    for name in ("kube-scheduler", "kube-apiserver", "etcd"):
        _kill(run / f"{name}.pid")
    if remove:
        shutil.rmtree(run, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--scheduler", action="store_true", help="kube-scheduler too (the bench)")
    s = sub.add_parser("start")
    s.add_argument("--build", action="store_true", help="build what is missing first")
    s.add_argument("--scheduler", action="store_true")
    s.add_argument("--run", help="run folder (default: a new temp folder)")
    t = sub.add_parser("stop")
    t.add_argument("run", nargs="?")
    t.add_argument("--keep", action="store_true", help="keep the run folder (logs)")
    sub.add_parser("reason")
    a = p.parse_args(argv)
    if a.cmd == "reason":
        why = reason()
        if why:
            print(why)
        return 0
    if a.cmd == "stop":
        stop(a.run, remove=not a.keep)
        return 0
    names = ("etcd", "kube-apiserver") + (("kube-scheduler",) if a.scheduler else ())
    try:
        if a.cmd == "build" or a.build:
            figures = build(names)
            print(json.dumps(figures), file=sys.stderr)
        if a.cmd == "start":
            env = start(Path(a.run) if a.run else None, scheduler=a.scheduler)
            for k, v in env.items():
                print(f"export {k}={v}")
    except Impossible as e:
        print(f"kubernetes control plane: {e}", file=sys.stderr)
        return 3
    except RuntimeError as e:
        print(f"kubernetes control plane: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
