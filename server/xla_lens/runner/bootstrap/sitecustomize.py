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


_install_hook()
_chain()
