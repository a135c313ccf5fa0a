"""A warm interpreter for proof runs: imports torch (and torch_xla) once, then runs each script
in a fresh fork of itself, the way `python script.py` would run it.

Why: importing torch_xla costs 6-8 s on a 2-core machine, more than most fixtures' training;
the proofs run ~130 scripts, so a cold interpreter per run spent most of the suite in imports.
Each run still gets its own process (its own session, cwd, environment, argv, `sys.path[0]`,
stdin/stdout/stderr, `__main__`, exit status), and the preloaded modules are fresh copies in
every fork, so one run cannot see another's state. Python's shutdown order is kept: wait for
non-daemon threads, then atexit handlers, then flush.

Not used for runs whose startup differs from the server's (a different environment, a
sitecustomize shim): those start a cold interpreter. XLA_LENS_TEST_COLD=1 runs every proof cold.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

# Runs in the server process: preload, then fork one child per request.
_SERVER = r"""
import importlib, json, os, sys
proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
# Whatever the preloaded modules print must not reach the protocol pipe.
os.dup2(2, 1)
devnull = os.open(os.devnull, os.O_RDONLY)
os.dup2(devnull, 0)
os.close(devnull)
for name in sys.argv[1:]:
    importlib.import_module(name)

def reply(**fields):
    proto_out.write((json.dumps(fields) + "\n").encode())

def child(req):
    os.setsid()
    proto_in.close()
    proto_out.close()
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    import atexit, builtins, threading, traceback, types
    from importlib.machinery import SourceFileLoader
    script = req["script"]
    sys.argv = [script, *req["args"]]
    sys.path[0] = os.path.dirname(script)
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__builtins__ = builtins
    main.__loader__ = SourceFileLoader("__main__", script)
    main.__spec__ = None
    sys.modules["__main__"] = main
    code = 0
    try:
        with open(script, "rb") as f:
            compiled = compile(f.read(), script, "exec")
        exec(compiled, main.__dict__)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF)

reply(ready=True)
buffered = b""
while True:
    while b"\n" not in buffered:
        chunk = proto_in.read(65536)
        if not chunk:
            sys.exit(0)
        buffered += chunk
    line, buffered = buffered.split(b"\n", 1)
    req = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        try:
            child(req)
        finally:
            os._exit(70)
    reply(pid=pid)
    _, status = os.waitpid(pid, 0)
    reply(pid=pid, returncode=os.waitstatus_to_exitcode(status))
"""

# Variables read while a script runs, not at startup (pytest names the current test in one):
# a server serves any value of them.
_RUNTIME_ONLY = ("XLA_LENS_", "MASTER_PORT", "PYTEST_")


class ServerGone(RuntimeError):
    pass


class WarmPython:
    """One preloaded server; `run` is `python script *args` in a fork of it."""

    def __init__(self, preload: Sequence[str], env: Mapping[str, str], start_timeout: float = 300):
        self.preload = tuple(preload)
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER, *self.preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=dict(env),
            start_new_session=True,
        )
        self._buffered = b""
        self._read_reply(time.monotonic() + start_timeout)

    def _read_reply(self, deadline: float | None) -> dict:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffered:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                self._log.seek(0)
                tail = self._log.read()[-2000:].decode(errors="replace")
                raise ServerGone(f"warm interpreter exited: {tail}")
            self._buffered += chunk
        line, self._buffered = self._buffered.split(b"\n", 1)
        return json.loads(line)

    def run(
        self,
        script: Path,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        timeout: float,
    ) -> tuple[int, str, str, bool]:
        """Returns (returncode, stdout, stderr, timed_out)."""
        assert self._proc.stdin is not None
        with tempfile.TemporaryDirectory(prefix="xla-lens-warm-") as tmp:
            out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
            request = {
                "script": str(script),
                "args": list(args),
                "env": dict(env),
                "cwd": str(cwd),
                "stdout": str(out),
                "stderr": str(err),
            }
            try:
                self._proc.stdin.write((json.dumps(request) + "\n").encode())
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError) as e:
                raise ServerGone(str(e)) from e
            pid = self._read_reply(time.monotonic() + 60)["pid"]
            timed_out = False
            try:
                returncode = self._read_reply(time.monotonic() + timeout)["returncode"]
            except TimeoutError:
                timed_out = True
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
                returncode = self._read_reply(None)["returncode"]
            finally:
                # Workers left behind by a launcher that exited early must not outlive the run.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            return (
                returncode,
                out.read_text(errors="replace"),
                err.read_text(errors="replace"),
                timed_out,
            )

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self._proc.stdin:
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._log.close()


_servers: dict[tuple, WarmPython | None] = {}


def _startup_key(preload: Sequence[str], env: Mapping[str, str]) -> tuple:
    startup = {k: v for k, v in env.items() if not k.startswith(_RUNTIME_ONLY)}
    return (tuple(preload), tuple(sorted(startup.items())))


def preload_for(env: Mapping[str, str]) -> tuple[str, ...]:
    """Conversions run under PJRT and import torch_xla; originals import only torch (importing
    torch_xla there could change what a library like transformers does)."""
    if env.get("PJRT_DEVICE"):
        return ("torch", "torch_xla", "torch_xla.core.xla_model")
    return ("torch",)


def enabled() -> bool:
    return os.environ.get("XLA_LENS_TEST_COLD", "") in ("", "0") and hasattr(os, "fork")


def run_warm(
    script: Path, args: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float
) -> tuple[int, str, str, bool] | None:
    """Run in the warm server for this environment (started on first use); None when no server
    can serve it (the caller then starts a cold interpreter)."""
    preload = preload_for(env)
    key = _startup_key(preload, env)
    # One server per preload: a server for another environment makes way (each holds
    # hundreds of MB).
    for stale in [k for k in _servers if k[0] == preload and k != key]:
        server = _servers.pop(stale)
        if server is not None:
            server.close()
    if key not in _servers:
        server_env = {k: v for k, v in env.items() if not k.startswith(_RUNTIME_ONLY)}
        try:
            _servers[key] = WarmPython(preload, server_env)
        except (ServerGone, TimeoutError, OSError):
            _servers[key] = None
    server = _servers[key]
    if server is None:
        return None
    try:
        return server.run(script, args, env, cwd, timeout)
    except (ServerGone, OSError):
        _servers[key] = None
        server.close()
        return None


@atexit.register
def _close_servers() -> None:
    for server in _servers.values():
        if server is not None:
            server.close()
    _servers.clear()
