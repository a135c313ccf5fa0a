"""XLA101's if/else device pickers: ``if torch.cuda.is_available(): device = "cuda" else: ...``
and the flag form ``if use_accel: device = ...`` (rewritten keeping only the user's flag), as
findings and fixes. Safety follows ``picker_fixes``: a rewrite is safe only when every use of the
device value still works with the XLA device and no other code decides placement by CUDA
availability."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator

from . import device_sites as sites
from . import picker_fixes as pf
from . import pickers, placement_guards
from .advice import Advice
from .cuda_queries import query_failure
from .edits import Replace, ReplaceStatement
from .model import Emitter
from .xla_api import Target


def if_picker_advice(model, target: Target, handled) -> Iterator[Advice]:
    for node in model.nodes_of(ast.If):
        if id(node) in handled or not isinstance(node, ast.If):
            continue
        ip = pickers.if_picker(model, node)
        if ip is None:
            continue
        handled.update(id(n) for n in ast.walk(node))
        e = Emitter(model)
        flow = sites.device_flow(model)
        values = [
            s.value
            for s in ast.walk(node)
            if isinstance(s, ast.Assign)
            and s.targets[0] is not ip.target
            and pickers._target_key(s.targets[0]) == pickers._target_key(ip.target)
        ] + [
            s.value
            for s in ast.walk(node)
            if isinstance(s, ast.Assign) and s.targets[0] is ip.target
        ]
        str_typed = all(sites.is_str_valued(model, v) for v in values)
        # Uses inside the block (a ``print`` of the CUDA device name) go with it.
        inside = {id(n) for n in ast.walk(node)}
        uses = [u for u in flow._store_uses(ip.target, 4, set()) if id(u.node) not in inside]
        code, safe, reason, follow = pf.choose(model, e, target, uses, str_typed)
        extras = [s for s in ip.extras if not pickers.is_harmless_extra(model, s)]
        # The accelerator branch's other work (a process group, a world size: ParallelWaveGAN,
        # held-out 36) is what an XLA host should run: it stays, after the new assignment.
        kept = [s for s in _device_branch(model, node, ip) if s in extras]
        lost = [s for s in extras if s not in kept]
        if kept:
            safe = False
            reason = (reason + "; " if reason else "") + (
                f"the CUDA branch's other statements now run on every host: {_shown(model, kept)}"
            )
        if lost:
            safe = False
            reason = (reason + "; " if reason else "") + (
                f"the other branch's statements no longer run: {_shown(model, lost)}"
            )
        name = model.segment(ip.target)
        kept_text, kept_comments = _statements_text(model, kept)
        # The block's other comments ride on the new statement, so removing the block keeps them.
        comments = "  ".join(c for c in sites.comments_in(model, node) if c not in kept_comments)
        statement = f"{name} = {code}" + (f"  {comments}" if comments else "")
        if kept_text:
            statement = f"{statement}\n{kept_text}"
        ops, safe, reason, note = pf.with_guards(
            model,
            handled,
            node,
            node.test,
            (ReplaceStatement(model.span(node), statement), *follow),
            safe,
            reason,
        )
        yield pf.advice(
            model,
            node,
            pf.message(
                "device picked by an availability test (torch.cuda.is_available() and the like "
                "are False on an XLA host, so this silently trains on the CPU)",
                safe,
                reason,
            ),
            pf.fix_plan(
                pf.titled(f"Use the XLA device: {name} = {code}", note), ops, e, safe, reason
            ),
        )


def _shown(model, stmts: list[ast.stmt]) -> str:
    return "; ".join(model.line_text(s.lineno - 1).strip()[:60] for s in stmts[:2])


def _device_branch(model, node: ast.If, ip: pickers.IfPicker) -> list[ast.stmt]:
    """The body of the branch that assigns the CUDA (accelerator) device."""
    key = pickers._target_key(ip.target)
    cur: ast.stmt = node
    while isinstance(cur, ast.If):
        bodies = [cur.body]
        nxt = cur.orelse[0] if len(cur.orelse) == 1 and isinstance(cur.orelse[0], ast.If) else None
        if nxt is None and cur.orelse:
            bodies.append(cur.orelse)
        for body in bodies:
            if any(
                isinstance(s, ast.Assign)
                and len(s.targets) == 1
                and pickers._target_key(s.targets[0]) == key
                and pickers.is_device_value(model, s.value)
                for s in body
            ):
                return body
        if nxt is None:
            break
        cur = nxt
    return []


def _statements_text(model, stmts: list[ast.stmt]) -> tuple[str, set[str]]:
    """The source of ``stmts`` with the comment lines just above each, dedented; and the
    comments in it."""
    if not stmts:
        return "", set()
    chunks: list[str] = []
    for stmt in stmts:
        first = stmt.lineno - 1
        while first > 0 and model.line_text(first - 1).lstrip().startswith("#"):
            first -= 1
        chunks.append("".join(model.text_lines(first, (stmt.end_lineno or stmt.lineno) - 1)))
    text = textwrap.dedent("".join(chunks)).rstrip("\n")
    comments = {line.strip() for line in text.splitlines() if line.strip().startswith("#")}
    found: set[str] = set()
    for stmt in stmts:
        found.update(sites.comments_in(model, stmt))
    return text, comments | found


def flag_if_advice(model, target: Target, handled) -> Iterator[Advice]:
    """``if use_accel: device = torch.accelerator.current_accelerator() else: ...`` with
    ``use_accel = not args.no_accel and torch.accelerator.is_available()``, or the same test
    written inline (``if args.accel and torch.accelerator.is_available():``): the device
    becomes XLA and the test keeps only the user's flag."""
    for node in model.nodes_of(ast.If):
        if id(node) in handled or not isinstance(node, ast.If):
            continue
        if not sites.chooses_device(model, node):
            continue
        named = pickers.mixed_flag(model, node.test) is not None
        inline = pickers.flag_part(model, node.test)
        if not named and not isinstance(inline, list):
            continue
        stmt = next(
            s
            for s in node.body
            if isinstance(s, ast.Assign)
            and any(sites.is_device_name(t) for t in s.targets)
            and pickers.is_device_value(model, s.value)
        )
        handled.update(id(n) for n in ast.walk(stmt))
        e = Emitter(model)
        uses = sites.device_flow(model)._store_uses(stmt.targets[0], 4, set())
        code, safe, reason, follow = pf.choose(
            model, e, target, uses, sites.is_str_valued(model, stmt.value)
        )
        if named:
            assert isinstance(node.test, ast.Name)
            flag_ops, flag_safe, flag_reason = sites.flag_name_edit(model, node.test)
            handled.update(id(a.value) for a in model.assignments.get(node.test.id, ()))
            kept = frozenset({node.test.id})
        else:
            assert isinstance(inline, list)
            flags = " and ".join(model.segment(f) for f in inline)
            flag_ops = (Replace(model.span(node.test), flags),)
            # With only the flag tested, the rest of the branch now runs on the XLA host too.
            cuda_only = [
                s for s in node.body if s is not stmt and placement_guards.needs_cuda(model, s)
            ]
            flag_safe = not cuda_only
            flag_reason = (
                "with the test reduced to the flag, the branch also runs "
                f"`{model.line_text(cuda_only[0].lineno - 1).strip()[:60]}` on the XLA host"
                if cuda_only
                else ""
            )
            failure = query_failure(model, cuda_only)
            if failure:
                flag_reason += f": {failure}"
            kept = frozenset()
        # The other branch now runs only when the user's flag says so: what it did besides
        # choosing the device (``gpu_index = -1``) no longer happens on the XLA host.
        lost = pickers.other_effects(model, node.orelse, stmt.targets[0])
        if lost:
            flag_safe = False
            shown = "; ".join(model.line_text(s.lineno - 1).strip()[:60] for s in lost[:2])
            flag_reason = "; ".join(
                r
                for r in (
                    flag_reason,
                    f"the other branch also runs `{shown}`, which no longer happens on the XLA "
                    "host (keep it where the script needs it)",
                )
                if r
            )
        safe, reason = safe and flag_safe, "; ".join(r for r in (reason, flag_reason) if r)
        ops, safe, reason, note = pf.with_guards(
            model,
            handled,
            node,
            node.test,
            (Replace(model.span(stmt.value), code), *flag_ops, *follow),
            safe,
            reason,
            kept,
        )
        yield pf.advice(
            model,
            stmt.value,
            pf.message(
                f"{model.segment(node.test)} asks whether CUDA/an accelerator is available "
                "(False on an XLA host), so this device is never used there",
                safe,
                reason,
            ),
            pf.fix_plan(
                pf.titled(f"Use the XLA device ({code}) and keep only the user's flag", note),
                ops,
                e,
                safe,
                reason,
            ),
        )
