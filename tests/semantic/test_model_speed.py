"""The speed-ups of the script model and its shared facts change no answer: the index's
child lists are ``ast.iter_child_nodes``'s, and every ``TensorNames`` of one model answers as
a fresh one would."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from xla_lens.engine.analysis import parse
from xla_lens.semantic.model import ScriptModel, child_nodes
from xla_lens.semantic.tensors import TensorNames

ROOT = Path(__file__).resolve().parents[2]
# Nodes CPython shares between all their uses (their parent is any one of them).
SINGLETONS = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)
# Every kind of syntax 3.11 has: match statements, f-strings with format specs, star
# expressions, async comprehensions, keyword defaults that are None, dict unpacking...
EVERY_SYNTAX = textwrap.dedent(
    """
    from __future__ import annotations
    import os, sys as system
    from . import sibling
    from ..pkg import thing as other

    @decorator(1, key=2)
    class C(Base, metaclass=Meta):
        x: int = 1
        def method(self, a, /, b=2, *args, c, d=None, **kw) -> "C":
            global G
            nonlocal_value = [i async for i in aiter() if i] if False else None
            return {**kw, "a": a, 1: [*args]}

    async def coro(x: int = 3):
        async with ctx() as (a, b), other():
            async for y in x:
                await y
        try:
            pass
        except* ValueError as e:
            raise e from None
        finally:
            del x

    def outer():
        v = 1
        def inner():
            nonlocal v
            v += 1
            yield from range(v)
        lam = lambda p, *q, r=4, **s: (p, q, r, s)
        return inner, lam

    match command.split():
        case [action, *rest] if action:
            pass
        case {"k": 1, **others}:
            pass
        case Point(x=0, y=yy) | Point(x=yy, y=0):
            pass
        case None | True | -1 | 1.5j | "s":
            pass
        case _:
            pass

    msg = f"{value!r:>{width}} {other=} {'x':{'y'}}"
    a, *b = c = d[1:2, ::3] = e @ f
    with open(p) as fh, lock:
        print(not fh, fh is None, fh in s, -a, ~b, a if b else c, (z := 3), x < y <= z)
    assert a, "msg"
    for i in range(3):
        continue
    else:
        pass
    while False:
        break
    x = {1, 2} | {k: v for k, v in items} | [i for i in it] | (g for g in it)
    y = b"bytes" + ... + __debug__
    """
)


def _sources() -> list[str]:
    texts = [EVERY_SYNTAX]
    for folder in ("samples", "tests/conversions/fixtures"):
        texts.extend(p.read_text() for p in sorted((ROOT / folder).glob("*.py")))
    texts.append(Path(ast.__file__).read_text())  # the stdlib's own, for breadth
    return texts


@pytest.mark.parametrize("text", _sources(), ids=lambda t: t[:0] or "source")
def test_child_nodes_are_ast_iter_child_nodes(text):
    tree = ast.parse(text)
    model = ScriptModel(text, tree)
    for node in ast.walk(tree):
        expected = list(ast.iter_child_nodes(node))
        assert child_nodes(node) == expected
        assert list(model._children[node]) == expected


def test_model_walk_is_ast_walk_and_parents_point_up():
    tree = ast.parse(EVERY_SYNTAX)
    model = ScriptModel(EVERY_SYNTAX, tree)
    assert list(model.walk(tree)) == list(ast.walk(tree))
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, SINGLETONS):
                assert model.parent(child) is node
    assert [type(c.func).__name__ for c in model.calls][:2] == ["Name", "Name"]
    assert set(model.functions) == {"method", "coro", "outer", "inner"}
    assert [n.lineno for n in model.loops] == sorted(n.lineno for n in model.loops)


TENSORS = """
import torch

def evaluate(model, loader):
    total = 0.0
    for x in loader:
        total += model(x).sum().item()
    return total / 2

def forward(model, x):
    return model(x)

class Trainer:
    def _run_batch(self, x):
        loss = self.model(x).sum()
        loss.backward()
        return loss.item()

    def fit(self, loader):
        for x in loader:
            loss = self._run_batch(x)
            score = evaluate(self.model, loader)
            out = self.model(x)
            print(f"{score} {out}")
"""


def test_tensor_names_shared_between_instances_answer_as_fresh_ones():
    text = textwrap.dedent(TENSORS)
    first, second = parse(text), parse(text)
    fit = first.functions["fit"]
    a, b = TensorNames(first), TensorNames(first)  # share one model's facts
    fresh = TensorNames(second)
    assert a.host_functions == fresh.host_functions == frozenset({"evaluate", "_run_batch"})
    reads = [n.value for n in ast.walk(fit) if isinstance(n, ast.FormattedValue)]
    fresh_reads = [
        n.value for n in ast.walk(second.functions["fit"]) if isinstance(n, ast.FormattedValue)
    ]
    assert [a.is_tensor(r) for r in reads] == [fresh.is_tensor(r) for r in fresh_reads]
    assert [b.is_tensor(r) for r in reads] == [False, True]
    assert b.names_at(reads[0]) is a.names_at(reads[0])
