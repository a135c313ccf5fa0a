"""Step hook run inside the child: reports per-step torch_xla metric deltas to the runner.

Stdlib only (the child may not have xla_lens). Messages are JSON lines appended with one
``os.write`` each to the file named by ``XLA_LENS_CHANNEL``; O_APPEND keeps lines from several
processes (launcher replicas, forks) whole. stdout and stderr belong to the user's script.

torch_xla is never imported here: a meta-path finder waits for the script to import it, then
wraps ``torch_xla.sync`` (``xm.mark_step`` and the MpDeviceLoader call it through the package
attribute; ``torch_xla.compile``/``step`` call the module global, so both are wrapped).
"""

import atexit
import importlib.abc
import json
import os
import sys
import threading
import time
import traceback

_COUNTERS = ("UncachedCompile", "CachedCompile", "MarkStep")
_METRICS = ("CompileTime", "ExecuteTime", "TransferFromDeviceTime")
# The per-event durations are matched, in order, with the compile/execute blocks of the debug
# file, so only these two keep their individual samples.
_SAMPLED = ("CompileTime", "ExecuteTime")

_fd = -1
_max_steps = 0
_debug_file = ""
_state = threading.local()
_lock = threading.Lock()
_primary = None  # ident of the first thread that syncs: its steps are the ones counted
_steps = 0
_last_t = 0.0
_prev = None
_XLAC = None
_rank = None
# The explain window: torch_xla dumps every synced graph (XLA_SAVE_TENSORS_FILE) with Python
# locations (XLA_IR_DEBUG) for the first steps only; see _close_explain_window.
_graphs_file = ""
_explain_steps = 0
_explain_graphs = 0


def _send(msg: dict) -> None:
    if _fd < 0:
        return
    msg["pid"] = os.getpid()
    try:
        os.write(_fd, (json.dumps(msg, separators=(",", ":")) + "\n").encode())
    except OSError:
        pass


def _snapshot() -> dict:
    counters = {}
    for name in _XLAC._xla_counter_names():
        if name in _COUNTERS or name.startswith("aten::"):
            counters[name] = _XLAC._xla_counter_value(name)
    metrics = {}
    for name in _METRICS:
        # metric_data copies up to 1024 samples each call: skip CompileTime unless a compile
        # happened (most steps), it is the costliest part of the hook.
        if (
            name == "CompileTime"
            and _prev is not None
            and counters.get("UncachedCompile", 0) == _prev["c"].get("UncachedCompile", 0)
        ):
            metrics[name] = _prev["m"].get(name, (0, 0.0, ()))
            continue
        data = _XLAC._xla_metric_data(name)
        if data:
            metrics[name] = data
    return {"c": counters, "m": metrics}


def _delta(prev: dict, cur: dict) -> dict:
    out = {"fallbacks": {}}
    for name, value in cur["c"].items():
        diff = value - prev["c"].get(name, 0)
        if name.startswith("aten::"):
            if diff:
                out["fallbacks"][name] = diff
        else:
            out[name] = diff
    for name in _METRICS:
        count, acc, samples = cur["m"].get(name, (0, 0.0, ()))
        pcount, pacc, _ = prev["m"].get(name, (0, 0.0, ()))
        new = count - pcount
        out[name] = {"count": new, "s": (acc - pacc) / 1e9}
        if name in _SAMPLED and new > 0:
            tail = samples[-new:] if new <= len(samples) else samples
            out[name]["each_s"] = [v / 1e9 for _, v in tail]
    return out


def _debug_offset() -> int:
    try:
        return os.stat(_debug_file).st_size if _debug_file else -1
    except OSError:
        return -1


def _local_rank():
    global _rank
    if _rank is None:
        try:
            import torch_xla.runtime as xr

            _rank = xr.local_ordinal()
        except Exception:
            _rank = -1
    return _rank


def _after_sync() -> None:
    global _primary, _steps, _last_t, _prev
    me = threading.get_ident()
    with _lock:
        if _primary is None:
            _primary = me
        if me != _primary:
            return
        now = time.perf_counter()
        cur = _snapshot()
        _steps += 1
        msg = {
            "t": "step",
            "step": _steps,
            "wall_s": now - _last_t,
            "rank": _local_rank(),
            "debug_offset": _debug_offset(),
            "d": _delta(_prev, cur),
        }
        _prev, _last_t = cur, now
        _send(msg)
        if _graphs_file and (
            _steps >= _explain_steps or cur["c"].get("UncachedCompile", 0) >= _explain_graphs
        ):
            _close_explain_window()
        if _max_steps and _steps >= _max_steps:
            _send({"t": "step_limit", "step": _steps})
            raise SystemExit(0)


def _close_explain_window() -> None:
    """Ends the graph dump after the window. torch_xla reads XLA_SAVE_TENSORS_FILE once, so it
    keeps formatting each synced graph: its file becomes a link to /dev/null (the window's
    graphs are kept in ``<file>.window``) and Python frames are no longer captured per IR node."""
    global _graphs_file
    base, _graphs_file = _graphs_file, ""
    try:
        _XLAC._set_ir_debug(False)
    except Exception:
        pass
    folder = os.path.dirname(base) or "."
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        suffix = name[len(os.path.basename(base)) + 1 :]
        if not name.startswith(os.path.basename(base) + ".") or not suffix.isdigit():
            continue
        if os.path.islink(path):
            continue
        try:
            os.rename(path, path + ".window")
            os.symlink(os.devnull, path + ".null")
            os.replace(path + ".null", path)  # atomic: a dump never creates a new real file
        except OSError:
            pass
    _send({"t": "explain_window", "step": _steps})


def _wrap(sync):
    def sync_hooked(*args, **kwargs):
        depth = getattr(_state, "depth", 0)
        _state.depth = depth + 1
        try:
            result = sync(*args, **kwargs)
        finally:
            _state.depth = depth
        if depth == 0:
            _after_sync()
        return result

    sync_hooked.__wrapped__ = sync
    sync_hooked.__name__ = getattr(sync, "__name__", "sync")
    sync_hooked.__doc__ = getattr(sync, "__doc__", None)
    return sync_hooked


def _patch(package) -> None:
    global _XLAC, _prev, _last_t
    _XLAC = package._XLAC
    inner = sys.modules.get("torch_xla.torch_xla")
    original = getattr(package, "sync", None)
    if original is None or getattr(original, "__wrapped__", None):
        return
    hooked = _wrap(original)
    package.sync = hooked
    if inner is not None and getattr(inner, "sync", None) is original:
        inner.sync = hooked
    _prev, _last_t = _snapshot(), time.perf_counter()
    atexit.register(_final)
    _send({"t": "xla_imported"})


def _final() -> None:
    if _XLAC is None:
        return
    try:
        with _lock:
            msg = {
                "t": "final",
                "steps": _steps,
                "rank": _local_rank(),
                "debug_offset": _debug_offset(),
                "d": _delta(_prev, _snapshot()),
                "fallback_ops": list(_XLAC._get_executed_fallback_ops()),
                # Tensors ever created on the XLA device: 0 means the device was never used.
                "xla_tensors": _XLAC._xla_counter_value("CreateXlaTensor") or 0,
            }
        _send(msg)
    except Exception as exc:
        _send({"t": "hook_error", "message": repr(exc)})


class _Loader(importlib.abc.Loader):
    def __init__(self, inner):
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        try:
            _patch(module)
        except Exception as exc:
            _send({"t": "hook_error", "message": repr(exc)})


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "torch_xla":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _Loader(spec.loader)
                sys.meta_path.remove(self)
                return spec
        return None


def _excepthook(exc_type, exc, tb):
    frames = [[f.filename, f.lineno, f.name] for f in traceback.extract_tb(tb)]
    _send({"t": "exception", "exc_type": exc_type.__name__, "message": str(exc), "frames": frames})
    _previous_excepthook(exc_type, exc, tb)


_previous_excepthook = sys.excepthook


def install() -> None:
    global _fd, _max_steps, _debug_file, _graphs_file, _explain_steps, _explain_graphs
    _fd = os.open(os.environ["XLA_LENS_CHANNEL"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.set_inheritable(_fd, False)
    _max_steps = int(os.environ.get("XLA_LENS_MAX_STEPS") or 0)
    _debug_file = os.environ.get("PT_XLA_DEBUG_FILE", "")
    _graphs_file = os.environ.get("XLA_LENS_GRAPHS_FILE", "")
    _explain_steps = int(os.environ.get("XLA_LENS_EXPLAIN_STEPS") or 0)
    _explain_graphs = int(os.environ.get("XLA_LENS_EXPLAIN_GRAPHS") or 0)
    sys.excepthook = _excepthook
    _send({"t": "hello", "ppid": os.getppid()})
    if "torch_xla" in sys.modules:
        _patch(sys.modules["torch_xla"])
    else:
        sys.meta_path.insert(0, _Finder())
