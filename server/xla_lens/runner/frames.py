"""Which frame of a stack is the user's: the line a compile, a host read or a crash belongs to."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from .events import Frame

_LIBRARY_MARKERS = ("site-packages", "dist-packages", "/lib/python3", "<frozen ", "<string>")
_TB_FRAME = re.compile(r'^\s*File "(.+)", line (\d+), in (.+)$')


class UserCode:
    """Decides whether a file is the user's: the script itself or a file under its folder,
    never an installed library, the stdlib or the runner's own bootstrap."""

    def __init__(self, script: Path) -> None:
        self.script = os.path.realpath(script)
        self.root = os.path.dirname(self.script)

    def is_user(self, file: str) -> bool:
        if any(m in file for m in _LIBRARY_MARKERS) or "xla_lens/runner/bootstrap" in file:
            return False
        real = os.path.realpath(file)
        return real == self.script or real.startswith(self.root + os.sep)

    def pick(self, frames: Sequence[Frame], innermost_first: bool = True) -> Frame | None:
        """The innermost user frame: where the user's code handed control to torch_xla."""
        ordered = list(frames) if innermost_first else list(reversed(frames))
        return next((f for f in ordered if self.is_user(f.file)), None)


def parse_traceback(lines: Sequence[str]) -> tuple[list[Frame], str, str] | None:
    """The last ``Traceback (most recent call last):`` in ``lines`` as (frames outermost first,
    exception type, message), for crashes the bootstrap's excepthook did not see (a launcher
    replica, a script that replaced ``sys.excepthook``)."""
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith("Traceback (most recent call last):"):
            start = i
            break
    if start is None:
        return None
    frames: list[Frame] = []
    last = ""
    for line in lines[start + 1 :]:
        m = _TB_FRAME.match(line)
        if m:
            frames.append(Frame(m.group(3), m.group(1), int(m.group(2))))
        elif line and not line.startswith((" ", "\t")):
            last = line.strip()
            break
    exc_type, _, message = last.partition(":")
    return frames, exc_type.strip(), message.strip()
