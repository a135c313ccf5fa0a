"""Reads that choose an agent's action for the environment's next step (XLA401, held-out 22
r1 and the dev corpus's cleanrl trap): not reported.

    action = dqn.act(state)                        # agent.py: return q.argmax(1).item()
    next_state, reward, done = env.step(action)

    actions = torch.argmax(q_network(obs), dim=1).cpu().numpy()
    next_obs, rewards, *_ = envs.step(actions)

A reinforcement-learning loop acts on the host: the environment needs the action now, so the
read is the algorithm itself, not a leftover sync. A step closure (XLA401's usual advice) would
hand ``env.step`` nothing, and keeping the value on the device is not possible; there is nothing
to change for XLA, so nothing is said. Recognised when the value read (or what a helper
returns from the read) is handed, later in the same iteration, to the ``step`` method of an
object named as an environment (``env``, ``envs``, ``self.env``, ``train_env``).
"""

from __future__ import annotations

import ast

from ...semantic.model import ScriptModel, method_name, receiver


def feeds_environment(model: ScriptModel, loop: ast.AST, node: ast.AST) -> bool:
    """Whether the value ``node`` (a read in ``loop``, or a loop call whose helper returns
    one) is an action handed to an environment's step in the same iteration."""
    for a in (node, *model.ancestors(node)):
        if a is loop:
            break
        if isinstance(a, ast.Call) and _environment_step(model, a) and a is not node:
            return True
    stmt = model.enclosing_statement(node)
    if not isinstance(stmt, ast.Assign | ast.AnnAssign):
        return False
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if not names:
        return False
    for n in model.walk(loop):
        if (
            isinstance(n, ast.Call)
            and getattr(n, "lineno", 0) >= stmt.lineno
            and _environment_step(model, n)
            and any(
                isinstance(x, ast.Name) and x.id in names
                for arg in (*n.args, *(k.value for k in n.keywords))
                for x in ast.walk(arg)
            )
        ):
            return True
    return False


def _environment_step(model: ScriptModel, call: ast.Call) -> bool:
    if method_name(call) != "step":
        return False
    recv = receiver(call)
    last = recv.attr if isinstance(recv, ast.Attribute) else getattr(recv, "id", "")
    last = last.lower()
    return last.startswith("env") or last.endswith("env") or last.endswith("envs")
