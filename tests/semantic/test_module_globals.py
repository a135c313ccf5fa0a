"""Which top-level assignments of a module a function reads as globals."""

import ast

from xla_lens.semantic.module_globals import global_reads

from tests.helpers import src

MODULE = src(
    """
    import torch
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    SCALE: float = 2.0
    other = 3

    def reads(x):
        return x.to(device) * SCALE

    def shadows(x, device):
        other = 1
        return x.to(device) + other

    def declares():
        global other
        other = 4
        return other
    """
)


def _lines(name: str) -> list[tuple[int, int]]:
    tree = ast.parse(MODULE)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return global_reads(tree, [fn])


def test_a_function_reading_module_level_names_depends_on_their_assignments():
    assert sorted(_lines("reads")) == [(2, 2), (3, 3)]


def test_parameters_and_locals_shadow_the_module_names():
    assert _lines("shadows") == []


def test_a_global_declaration_reads_the_module_name():
    assert _lines("declares") == [(4, 4)]
