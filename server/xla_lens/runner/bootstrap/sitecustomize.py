"""xla-lens bootstrap, loaded by the child interpreter because the runner puts this folder
first on PYTHONPATH. It must work without xla_lens installed, so it only uses the stdlib.

It installs the step hook (``_xla_lens_hook``) when the runner asked for it, then chains to
whatever ``sitecustomize`` the interpreter would have loaded without us, so a virtualenv's or
distro's own customisation keeps working.
"""

import importlib.machinery
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _arm_lifeline() -> None:
    """Dies with the runner: the runner's lifeline pipe (read end inherited as XLA_LENS_LIFELINE
    = "FD:INODE") gets SIGKILL for this process group when its last writer, the runner, goes
    away. The runner arms it too once it knows the group; arming here also covers a runner that
    died before that, which shows as end of file already."""
    spec = os.environ.pop("XLA_LENS_LIFELINE", "")  # popped: subprocesses must not reuse the fd
    if not spec:
        return
    try:
        import fcntl
        import select
        import signal
        import stat

        fd_text, _, inode_text = spec.partition(":")
        fd = int(fd_text)
        info = os.fstat(fd)
        if not stat.S_ISFIFO(info.st_mode) or info.st_ino != int(inode_text):
            return  # not our pipe: the number was reused, leave that fd alone
        group = os.getpgrp()
        fcntl.fcntl(fd, fcntl.F_SETOWN, -group)
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGKILL)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
        # Nothing is ever written to the pipe: readable means end of file, the runner is gone.
        if select.select([fd], [], [], 0)[0]:
            os.killpg(group, signal.SIGKILL)
    except (ValueError, OSError, AttributeError):
        pass  # the runner's own arming and its watchdog still end the run


def _install_hook() -> None:
    if not os.environ.get("XLA_LENS_CHANNEL"):
        return
    try:
        import _xla_lens_hook

        _xla_lens_hook.install()
    except Exception as exc:  # never break the user's script because of the runner
        sys.stderr.write(f"xla-lens: bootstrap hook not installed: {exc!r}\n")


def _chain() -> None:
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_xla_lens_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


_arm_lifeline()
_install_hook()
_chain()
