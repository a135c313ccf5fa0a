"""XLA204: no ``_mp_fn(index)`` entry point.

The XLA launcher (``xmp.spawn`` / ``torch_xla.launch``, and SageMaker Training Compiler's
distributed launcher for Trainer scripts) starts one process per device and calls
``_mp_fn(index)`` in each; a script without it cannot be launched that way.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ..semantic import xla_api
from ..semantic.device_intent import being_converted
from ..semantic.launch import guard_runs_training_itself, has_own_launcher, training_entry_call
from ..semantic.line_refs import line_ref
from ..semantic.model import Emitter, ScriptModel, arg_or_keyword, const_str, keyword, method_name
from ..semantic.node_helpers import main_guard
from .base import (
    Category,
    Finding,
    Fix,
    Pos,
    ReplaceStatement,
    Rule,
    RuleContext,
    Severity,
    Span,
)
from .parts.guard_globals import guard_only_global
from .parts.hand_launchers import hand_launches
from .parts.rank_option_gates import rank_option_reason
from .parts.replica_coordination import FAILS_AT_ONCE, independent_replicas
from .parts.spawn_launch import spawn_findings

CODE = "XLA204"
ENTRY = "_mp_fn"
XLA_LAUNCHERS = ("torch_xla.launch", "torch_xla.distributed.xla_multiprocessing.spawn")


def _takes_index(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    # xmp.spawn(fn, args=(...)) passes extra arguments after the index, so more is fine.
    a = fn.args
    return bool(a.posonlyargs or a.args or a.vararg)


def _calls_main(guard: ast.If) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "main"
        for n in ast.walk(guard)
    )


def _header_span(model: ScriptModel, node: ast.stmt) -> Span:
    """The first line of a statement, so the diagnostic does not paint its whole body."""
    start = model.span(node).start
    return Span(start, Pos(start.line, len(model.line_text(start.line))))


def _newline(model: ScriptModel) -> str:
    first = model.text_lines(0, 0)[0] if model.lines else "\n"
    return "\r\n" if first.endswith("\r\n") else "\n"


def _entry_call(model: ScriptModel, guard: ast.If) -> ast.Call | None:
    """The guard's call of the function that trains (``training_entry_call``), with plain
    arguments the launcher can pass on."""
    call = training_entry_call(model, guard)
    if call is None or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return call


def guard_entry(model: ScriptModel) -> str | None:
    """The function the main guard starts (``main`` in ``main()``): the one the guard
    rewrite wraps in ``_mp_fn``, so each replica runs it."""
    guard = main_guard(model.tree)
    call = _entry_call(model, guard) if isinstance(guard, ast.If) else None
    return call.func.id if call is not None else None  # type: ignore[attr-defined]


# torch_xla calls in the parent would start the XLA runtime before the launcher does.
PROCESS_STATE_PREFIXES = ("torch.distributed.", "torch.cuda.", "torch.backends.", "torch_xla.")
TORCHRUN_KEYS = {"RANK", "LOCAL_RANK", "WORLD_SIZE"}
PROCESS_STATE_CALLS = {"torch.manual_seed", "random.seed", "numpy.random.seed"}


def _process_setup(model: ScriptModel, guard: ast.If, call: ast.Call) -> list[ast.AST]:
    """Calls in the main guard (besides the entry call) that set per-process state: a
    process group, a CUDA device, seeds. Under the XLA launcher only the parent runs them."""
    found: list[ast.AST] = []
    entry = model.enclosing_statement(call)
    # Module-level code runs in the parent too (and again in each spawned process).
    top = [
        s
        for s in model.tree.body
        if s is not guard
        and not isinstance(
            s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom
        )
    ]
    for stmt in [*top, *guard.body]:
        if stmt is entry:
            continue
        for n in ast.walk(stmt):
            if isinstance(n, ast.Call):
                name = model.call_name(n) or ""
                if name in PROCESS_STATE_CALLS or name.startswith(PROCESS_STATE_PREFIXES):
                    found.append(n)
            if isinstance(n, ast.Constant) and n.value in TORCHRUN_KEYS:
                # A rank read in the parent (it becomes an XLA runtime query).
                found.append(n)
    return found


def _setup_reason(model: ScriptModel, setup: list[ast.AST], entry: str) -> str:
    lines = sorted({_line(n) for n in setup})
    shown = "; ".join(
        f"line {line_ref(ln)}: {model.line_text(ln - 1).strip()[:50]}" for ln in lines[:3]
    ) + ("; ..." if len(lines) > 3 else "")
    seeds = [
        n
        for n in setup
        if isinstance(n, ast.Call) and "seed" in (model.call_name(n) or "").rpartition(".")[2]
    ]
    unseeded = (
        f" (the seed at line {line_ref(_line(seeds[0]))} would seed only the launching process: the "
        "replicas would start unseeded)"
        if seeds
        else ""
    )
    passed = {
        a.id
        for c in model.calls
        if isinstance(c.func, ast.Name) and c.func.id == entry
        for a in (*c.args, *(k.value for k in c.keywords))
        if isinstance(a, ast.Name)
    }
    ranks = [
        n
        for n in setup
        if isinstance(n, ast.Constant)
        and n.value in TORCHRUN_KEYS
        and isinstance(stmt := model.enclosing_statement(n), ast.Assign)
        and any(isinstance(t, ast.Name) and t.id in passed for t in stmt.targets)
    ]
    handed = (
        f" (the rank read at line {line_ref(_line(ranks[0]))} would be handed to every replica "
        "alike: the same rank and data shard in each; inside the entry function take "
        "xr.global_ordinal() and xr.world_size() instead, and without torchrun that read "
        "raises KeyError)"
        if ranks
        else ""
    )
    defaulted = [n for n in setup if isinstance(n, ast.Constant) and _read_with_default(model, n)]
    silent = (
        f" (line {line_ref(_line(defaulted[0]))} reads {defaulted[0].value} with a default: "  # type: ignore[attr-defined]
        "torch_xla's launcher sets no torchrun variables, so every replica would take the "
        "default there, silently (one process's world: no DDP, no sampler shards); inside the "
        "entry function ask xr.world_size() / xr.global_ordinal() instead)"
        if defaulted and not ranks
        else ""
    )
    return (
        f"the script also sets up process state outside {entry}() ({shown}); it runs in the "
        "launching process, where it starts CUDA or the XLA runtime before the launcher does: "
        f"move it into the entry function{unseeded}{handed}{silent}"
    )


def _read_with_default(model: ScriptModel, key: ast.Constant) -> bool:
    """``int(os.environ["WORLD_SIZE"]) if "WORLD_SIZE" in os.environ else 1`` or
    ``os.environ.get("WORLD_SIZE", 1)``: a torchrun variable read that survives its absence
    (GPEN, held-out 95)."""
    stmt = model.enclosing_statement(key)
    if stmt is None:
        return False
    for n in ast.walk(stmt):
        if (
            isinstance(n, ast.Compare)
            and isinstance(n.left, ast.Constant)
            and n.left.value == key.value
            and any(isinstance(op, ast.In) for op in n.ops)
        ):
            return True
        if (
            isinstance(n, ast.Call)
            and method_name(n) == "get"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and n.args[0].value == key.value
            and (len(n.args) > 1 or n.keywords)
        ):
            return True
    return False


def _placed_arguments(model: ScriptModel, guard: ast.If, call: ast.Call) -> str:
    """Arguments of the entry call that the guard builds on a device (GPEN, held-out 95:
    ``generator = FullGenerator(...).to(device)`` then ``train(args, loader, generator, ...)``):
    handed to the launcher, they are made in its parent, where the XLA device starts the
    runtime before the launch (which then refuses to start, measured) and CUDA is absent."""
    passed = {a.id for a in call.args if isinstance(a, ast.Name)}
    placed: list[tuple[int, str]] = []
    for stmt in guard.body:
        if not isinstance(stmt, ast.Assign):
            continue
        names = [t.id for t in stmt.targets if isinstance(t, ast.Name) and t.id in passed]
        if names and any(
            isinstance(n, ast.Call) and _moves_to_a_device(model, n) for n in ast.walk(stmt.value)
        ):
            placed.append((stmt.lineno, names[0]))
    if not placed:
        return ""
    shown = ", ".join(f"`{name}` (line {line_ref(line)})" for line, name in placed[:3])
    more = f" and {len(placed) - 3} more" if len(placed) > 3 else ""
    return (
        f"it hands the replicas {shown}{more}, built on the device in the launching process: "
        "there the XLA device starts the runtime before the launch, which then refuses to "
        "start ('Runtime is already initialized'); build them inside the entry function"
    )


def _moves_to_a_device(model: ScriptModel, call: ast.Call) -> bool:
    name = method_name(call)
    if name == "cuda":
        return True
    if name != "to":
        return False
    if any(k.arg == "device" for k in call.keywords):
        return True
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Constant):
        return isinstance(first.value, str) and first.value.startswith(("cuda", "xla"))
    if isinstance(first, ast.Call):
        return (model.call_name(first) or "") in ("torch.device", "torch_xla.device")
    text = model.segment(first).lower() if first is not None else ""
    return "device" in text or "gpu" in text or "rank" in text


def _rendezvous_reason(model: ScriptModel, ctx: RuleContext) -> str:
    # foreign_launcher asks this rule back (the XLA205 fix it counts on asks it too).
    from .parts.foreign_launcher import env_rendezvous_reason

    return env_rendezvous_reason(model, ctx.target)


def _line(node: ast.AST) -> int:
    return getattr(node, "lineno", 1)


def _guard_text(model: ScriptModel, guard: ast.If) -> tuple[int, int]:
    first, last = guard.lineno - 1, (guard.end_lineno or guard.lineno) - 1
    # Indented comment lines after the last statement belong to the guard's block.
    for i in range(last + 1, len(model.lines)):
        text = model.text_lines(i, i)[0]
        if text.strip() and not (text[:1].isspace() and text.lstrip().startswith("#")):
            break
        if text.strip():
            last = i
    return first, last


def _rewrite_guard(
    model: ScriptModel, guard: ast.If, call: ast.Call, launch: str | None
) -> ReplaceStatement:
    """``def _mp_fn`` above the guard (PEP 8 blank lines) and, with ``launch``, the entry
    call replaced by the launcher. The guard is reproduced from its source lines, which
    keeps its text (comments included) byte for byte."""
    nl = _newline(model)
    first, last = _guard_text(model, guard)
    lines = model.text_lines(first, last)
    params = [model.segment(a) for a in call.args]
    names = [p if p.isidentifier() else f"arg{i}" for i, p in enumerate(params)]
    header = ", ".join(["index", *names])
    body = f"{call.func.id}({', '.join(names)})"  # type: ignore[attr-defined]
    if launch is not None:
        stmt = model.enclosing_statement(call)
        assert stmt is not None
        s0, s1 = stmt.lineno - 1 - first, (stmt.end_lineno or stmt.lineno) - 1 - first
        indent = lines[s0][: len(lines[s0]) - len(lines[s0].lstrip())]
        ending = lines[s1][len(lines[s1].rstrip("\r\n")) :]
        tail = lines[s1].rstrip("\r\n").encode()[stmt.end_col_offset or 0 :].decode()
        lines[s0 : s1 + 1] = [f"{indent}{launch}{tail}{ending}"]
    guard_text = "".join(lines).rstrip("\r\n")
    code = f"def {ENTRY}({header}):{nl}    {body}{nl}{nl}{nl}{guard_text}{nl}"
    return ReplaceStatement(model.span(guard), code)


def _unpicklable_args(guard: ast.If, call: ast.Call) -> str:
    """Why the launcher cannot hand ``call``'s arguments to its processes: it pickles them
    for processes that import the script as ``__mp_main__``, where the main block does not
    run, so a class or function defined in that block (or a lambda) cannot be loaded there
    (held-out 10 r5: "Can't get attribute 'A' on <module '__mp_main__'>")."""
    local = {
        n.name
        for n in ast.walk(guard)
        if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    }
    bound = {
        t.id: n.value
        for n in ast.walk(guard)
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    for arg in call.args:
        values = [
            arg,
            *(bound[n.id] for n in ast.walk(arg) if isinstance(n, ast.Name) and n.id in bound),
        ]
        for value in values:
            for n in ast.walk(value):
                if isinstance(n, ast.Lambda) or (isinstance(n, ast.Name) and n.id in local):
                    shown = "a lambda" if isinstance(n, ast.Lambda) else f"`{n.id}`"
                    return (
                        f"torch_xla.launch pickles args=(...) for its processes, which import "
                        f"this file without running its main block: {shown}, defined there, "
                        "cannot be loaded in them; move it to module level first"
                    )
    return ""


def _started_from_outside(model: ScriptModel) -> bool:
    """A process group that rendezvouses by env:// (the default) with no store: RANK,
    WORLD_SIZE and MASTER_ADDR come from whatever starts the script."""
    for call in model.calls_to("torch.distributed.init_process_group"):
        method = arg_or_keyword(call, 1, "init_method")
        if keyword(call, "store") is not None:
            continue
        if method is None or (const_str(method) or "").startswith("env://"):
            return True
    return False


def _launch_code(model: ScriptModel, ctx: RuleContext, call: ast.Call) -> tuple[str, Emitter]:
    e = Emitter(model)
    code = xla_api.launch(e, ctx.target, ENTRY)
    if call.args:
        args = ", ".join(model.segment(a) for a in call.args)
        code = f"{code[:-1]}, args=({args},))"
    return code, e


def _launched_without_index(model: ScriptModel) -> Iterator[Finding]:
    """``xmp.spawn(main)`` / ``torch_xla.launch(main)`` where ``main`` cannot take the index the
    launcher passes (held-out 58's Waifu4x: ``def main():``, TypeError in every process)."""
    for call in model.calls:
        if model.call_name(call) not in XLA_LAUNCHERS or not call.args:
            continue
        target = call.args[0]
        fn = model.functions.get(target.id) if isinstance(target, ast.Name) else None
        if fn is None or fn.name == ENTRY or fn.args.vararg is not None:
            continue
        extra = arg_or_keyword(call, 1, "args")
        if extra is not None and not isinstance(extra, ast.Tuple | ast.List):
            continue  # how many it hands over is not visible
        given = 1 + (len(extra.elts) if extra is not None else 0)  # type: ignore[union-attr]
        takes = len(fn.args.posonlyargs) + len(fn.args.args)
        if takes >= given:
            continue
        launcher = model.segment(call.func)
        yield Finding(
            CODE,
            f"{launcher}() calls {fn.name}(index{', *args' if given > 1 else ''}) in every "
            f"process, but {fn.name}() takes {takes or 'no'} positional argument"
            f"{'' if takes == 1 else 's'}: each process fails with TypeError",
            model.span(target),
            Severity.ERROR,
            manual=f"launch an entry that takes the process index: `def {ENTRY}(index): "
            f"{fn.name}()`, or declare `def {fn.name}(index):`",
            related=((_header_span(model, fn), f"{fn.name}() is defined here"),),
        )


def check(model: ScriptModel, ctx: RuleContext) -> Iterator[Finding]:
    yield from _launched_without_index(model)
    if not model.uses_torch_xla and any(hand_launches(model, CODE)):
        # ``mp.Process(target=run)`` per GPU (PreSumm): converting that launcher is the change
        # to make; an _mp_fn around the entry would start a second one.
        yield from hand_launches(model, CODE)
        return
    distributed = model.is_distributed
    if not (distributed or model.uses_trainer):
        return
    # Only local processes need it for distributed Trainer runs; single device works as is.
    severity = Severity.WARNING if distributed else Severity.INFORMATION
    entry = model.functions.get(ENTRY)
    if entry is not None:
        if not _takes_index(entry):
            yield Finding(
                CODE,
                f"{ENTRY} must take the process index: the XLA launcher calls {ENTRY}(index)",
                _header_span(model, entry),
                severity,
                manual=f"declare it as def {ENTRY}(index):",
            )
        return
    if (model.uses_torch_xla and not being_converted(model)) or has_own_launcher(model):
        # A script that already imports torch_xla has its own launcher (or runs SPMD);
        # accelerate and Lightning launch XLA processes themselves. One that still shows
        # CUDA is being converted: the import is a safe fix's, and the finding must not
        # vanish from what is left to do once the safe fixes are in.
        return
    spawns = spawn_findings(model, ctx)
    if spawns:
        # The script launches its own workers: converting that launcher is the fix; an
        # _mp_fn around it would start a second launcher.
        yield from spawns
        return
    if any(model.call_name(c) in XLA_LAUNCHERS for c in model.calls):
        # The script starts its replicas with the XLA launcher already (mp.spawn converted in
        # an earlier round): launching main() too would run that launcher inside a launched
        # process ("Runtime is already initialized").
        return
    guard = main_guard(model.tree)
    message = (
        f"no {ENTRY}(index) entry point: the XLA launcher (torch_xla.launch / xmp.spawn) "
        f"calls {ENTRY}(index) once per device"
    )
    call = _entry_call(model, guard) if guard is not None else None
    if guard is not None and call is not None and model.in_indented_block(guard.body[0]):
        name = call.func.id  # type: ignore[attr-defined]
        if distributed:
            launch, e = _launch_code(model, ctx, call)
            setup = _process_setup(model, guard, call)
            reason = guard_only_global(model, guard, model.functions[name]) or (
                (
                    _setup_reason(model, setup, name)
                    if setup
                    else independent_replicas(model, model.functions[name]) or ""
                )
                or _rendezvous_reason(model, ctx)
                or _unpicklable_args(guard, call)
            )
            placed = _placed_arguments(model, guard, call)
            # The rewrite alone cannot run: models built on the XLA device before the launch
            # (the launcher refuses: "Runtime is already initialized"), or replica code that
            # raises KeyError on torchrun's variables. Not offered even for review, the
            # reason says what must change first (held-outs 104, 105: stylegan2, LLaMA-Adapter).
            cannot_run = bool(placed) or reason.startswith(FAILS_AT_ONCE)
            reason = "; ".join(r for r in (reason, placed, rank_option_reason(model)) if r)
            title = (
                f"Add def {ENTRY}(index{', ...' if call.args else ''}) and start it with {launch}"
            )
            if cannot_run:
                yield Finding(
                    CODE,
                    f"{message} (no automatic fix: the launch alone would not run: {reason})",
                    model.span(call),
                    severity,
                    manual=f"First: {reason}. Then {title[0].lower()}{title[1:]}.",
                )
                return
            fix = Fix(
                title,
                (_rewrite_guard(model, guard, call, launch), *e.imports),
                safe=not reason,
                review_reason=reason,
            )
            text = f"{message} (fix needs review: {reason})" if reason else message
            if not reason and _started_from_outside(model):
                # SiT/DiT (held-out 46): env:// today, so torchrun starts it. torch_xla 2.9's
                # launch() checks dist.is_torchelastic_launched() and then calls the function
                # in-process with LOCAL_RANK, but the runtime's rank answers that replace
                # torchrun's variables (XLA202) are torchrun's only once pjrt's xla:// handler
                # has run (and never on PJRT CPU, measured): MONAI's BraTS trainer (held-out
                # 70) silences every process but LOCAL_RANK 0 before its group is built.
                text += (
                    "; today a launcher such as torchrun starts this script (its process group "
                    "reads RANK/WORLD_SIZE): converted, start it with plain `python`, which "
                    "starts one process per device through torch_xla.launch. Not with torchrun: "
                    "there torch_xla.launch runs `_mp_fn` once in each process, but the XLA "
                    "runtime's rank answers that replace torchrun's variables (xr.local_ordinal(), "
                    "xr.global_ordinal()) number the processes only once an xla:// process group "
                    "is up on TPU: before it, and throughout on the CPU runtime, every process "
                    "is 0 of 1"
                )
            yield Finding(CODE, text, model.span(call), severity, fix=fix)
            return
        if not call.args:
            # Trainer scripts: a launcher that imports the script (xla_spawn) calls _mp_fn.
            # It does not run the main block: a global only that block binds is missing there.
            missing = guard_only_global(model, guard, model.functions[name])
            fix = Fix(
                f"Add def {ENTRY}(index): {name}()",
                (_rewrite_guard(model, guard, call, None),),
                safe=not missing,
                review_reason=missing,
            )
            text = f"{message} (fix needs review: {missing})" if missing else message
            yield Finding(CODE, text, model.span(call), severity, fix=fix)
            return
        yield Finding(
            CODE,
            message,
            model.span(call),
            severity,
            manual=f"{name}() takes arguments the launcher cannot pass: define "
            f"def {ENTRY}(index): that builds them and calls {name}(...)",
        )
        return
    main = model.functions.get("main")
    main_at_top = main is not None and main in model.tree.body
    anchor = guard or (main if main_at_top else None)
    if anchor is None:
        # Training code at module level (a script without main) needs an entry point; a
        # module of helper functions is not what the launcher runs.
        anchor = next(
            (
                model.enclosing_statement(c)
                for c in model.calls_to("torch.distributed.init_process_group")
                if model.is_module_level(c)
            ),
            None,
        )
        if anchor is None:
            return
    span = _header_span(model, anchor)
    manual = f"define def {ENTRY}(index): that runs the training ({_what_main_runs(model, guard)})"
    dispatch = _cli_dispatch(model, guard) if guard is not None else None
    if dispatch is not None and call is None:
        # ``fire.Fire(main)`` (held-out 80's po2_quantization): the training is in main(), which
        # the CLI library calls with the arguments it parses; each replica can do the same.
        shown = model.segment(dispatch)
        message = (
            f'{message}; here the `if __name__ == "__main__":` block hands the training '
            f"function to `{shown}`, which parses the command line and calls it"
        )
        manual = (
            f"define def {ENTRY}(index): {shown} (each replica parses the command line itself) "
            f"and start it with the XLA launcher (torch_xla.launch({ENTRY}))"
        )
    elif guard is not None and (call is None and training_stays_in_guard(model, guard)):
        # llm.c: the block is the whole program and ends with print0("done"); wrapping that
        # last call would leave the training in the launcher's parent process.
        message = (
            f'{message}; here the training runs in the `if __name__ == "__main__":` block '
            "itself, not in one function it calls, so no launcher can be added around it"
        )
        # A name the script does not use yet: held-out 61's vq-vae-2 has its own main(args),
        # which `_mp_fn(index): main()` would call without its argument (TypeError).
        fresh = next(
            n for n in ("main", "run", "run_training", "_xla_main") if n not in model.functions
        )
        manual = (
            f'move the code of the `if __name__ == "__main__":` block into a {fresh}() function, '
            f"then define def {ENTRY}(index): {fresh}() and start it with the XLA launcher "
            f"(torch_xla.launch({ENTRY}))"
        )
    yield Finding(CODE, message, span, severity, manual=manual)


CLI_DISPATCHERS = frozenset(
    {"fire.Fire", "typer.run", "jsonargparse.CLI", "tyro.cli", "defopt.run", "clize.run"}
)


def _cli_dispatch(model: ScriptModel, guard: ast.If) -> ast.Call | None:
    """``fire.Fire(main)`` in the main guard: a CLI library handed a function of the script."""
    for stmt in guard.body:
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Call)
                and model.call_name(node) in CLI_DISPATCHERS
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in model.functions
            ):
                return node
    return None


def _what_main_runs(model: ScriptModel, guard: ast.If | None) -> str:
    """The call the ``__main__`` block makes, when that is all it does (ChatGLM3's typer
    ``app()``, held-out 40: ``main()`` there takes typer's arguments and raises TypeError)."""
    body = [s for s in guard.body if not isinstance(s, ast.Pass)] if guard is not None else []
    if len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call):
        call = body[0].value
        if not call.args and not call.keywords:
            return f"here: calls {model.segment(call)}, as the `__main__` block does"
    if "main" in model.functions:
        return "e.g. calls main()"
    # No main() to call (a Trainer script written inline under the guard, held-out 116).
    if guard is not None:
        return 'the code of the `if __name__ == "__main__":` block, moved into a function first'
    return "the script's module-level training code, moved into a function first"


def training_stays_in_guard(model: ScriptModel, guard: ast.If) -> bool:
    """The guard trains in its own code, or through calls that are not one plain call."""
    return guard_runs_training_itself(model, guard) or (
        bool(model.training_loops) and training_entry_call(model, guard) is None
    )


HOVER_MP_FN = """\
**XLA204 · the `_mp_fn(index)` entry point**

XLA runs one process per device; the launcher calls `_mp_fn(index)` in each.

```python
def _mp_fn(index):
    main()
```

| target | launcher |
|---|---|
| modern (torch_xla ≥ 2.5) | `torch_xla.launch(_mp_fn)` |
| legacy (1.13) | `xmp.spawn(_mp_fn)` (`torch_xla.distributed.xla_multiprocessing`) |

Hugging Face `Trainer` scripts need it only for distributed runs.
"""

RULE = Rule(
    code=CODE,
    name="mp-fn",
    category=Category.DISTRIBUTED,
    summary="Distributed or Trainer script without the _mp_fn(index) entry point → def _mp_fn(index): main()",
    severity=Severity.WARNING,
    check=check,
    has_fix=True,
    hover={
        "torch_xla.distributed.xla_multiprocessing.spawn": HOVER_MP_FN,
        "torch_xla.launch": HOVER_MP_FN,
    },
)
