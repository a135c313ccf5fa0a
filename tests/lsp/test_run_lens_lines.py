"""The Run lens of a script that does not parse (mid-edit) sits on the main guard's line as
LSP counts lines: only \\n, \\r\\n and \\r end a line, not a form feed or U+2028 in a comment."""

from __future__ import annotations

import pytest
from xla_lens.lsp.run_lens import entry_line

NOT_LSP_LINE_BREAKS = ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("ch", NOT_LSP_LINE_BREAKS, ids=lambda c: f"U+{ord(c):04X}")
def test_unparsable_script_lens_line_uses_lsp_lines(ch: str) -> None:
    text = f"import torch\n# a{ch}b\ndef broken(:\n\nif __name__ == '__main__':\n    main()\n"
    assert entry_line(text) == 4


def test_unparsable_script_with_a_bom_finds_a_guard_on_its_first_line() -> None:
    assert entry_line("\ufeffif __name__ == '__main__':\n    main(\n") == 0


def test_lone_carriage_returns_end_lines() -> None:
    assert entry_line("x = (\rdef main():\r    pass\r") == 1
