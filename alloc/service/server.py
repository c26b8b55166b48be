"""Running the application: in the foreground (``alloc serve``) or from a
background thread on a free loopback port (tests, examples)."""
from __future__ import annotations

import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Running:
    """A service running in a background thread; `stop` ends it."""
    url: str
    server: Any               # uvicorn.Server (an optional dependency)
    thread: threading.Thread

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to exit and wait for its thread."""
        self.server.should_exit = True
        self.thread.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def run_in_thread(app, host: str = "127.0.0.1", port: int = 0,
                  log_level: str = "warning") -> Running:
    """Serve ``app`` with uvicorn from a daemon thread; ``port=0`` picks a free
    port.  Returns once the server accepts connections."""
    import uvicorn
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the service did not start")
        time.sleep(0.01)
    return Running(f"http://{host}:{port}", server, thread)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@dataclass
class Process:
    """``alloc serve`` running in a child process; `stop` ends it."""
    url: str
    proc: subprocess.Popen
    log: Any = None           # the child's standard error (a temporary file)

    def log_text(self) -> str:
        """What the service wrote to its standard error so far."""
        if self.log is None:
            return ""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the child and wait for it."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except Exception:
                self.proc.kill()
                self.proc.wait(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def spawn(args=(), host: str = "127.0.0.1", env=None, cwd=None, timeout: float = 60.0) -> Process:
    """Start ``python -m alloc serve --host HOST --port P ARGS`` on a free port
    and wait until ``/healthz`` answers."""
    import sys
    import tempfile
    import urllib.request
    port = free_port(host)
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "alloc", "serve", "--host", host,
                             "--port", str(port), *args], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://{host}:{port}"
    end = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"alloc serve exited: {log.read().decode()[-500:]}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return Process(url, proc, log)
        except OSError:
            if time.monotonic() > end:
                proc.kill()
                raise RuntimeError("alloc serve did not start") from None
            time.sleep(0.05)


__all__ = ["Process", "Running", "free_port", "run_in_thread", "spawn"]
