"""XLA401 on a float averaged over a count: quiet when the count is a command-line value
(argparse gives strings and numbers, never a device tensor); where the count is a parameter
of unknown type the finding stays (a float divided by a tensor is a tensor) but says so."""

from tests.helpers import findings

ARGPARSE = """
import argparse
import torch


def print0(*a):
    print(*a)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--val_max_steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--name", default="run")
    {extra}
    args = parser.parse_args()
    model = torch.nn.Linear(4, 1).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    for step in range(10):
        val_loss = 0.0
        for _ in range(args.val_max_steps):
            loss = model(torch.ones(2, 4, device="cuda")).mean()
            val_loss += loss.item()
        val_loss /= args.val_max_steps
        print0(f"val loss {{val_loss}}")
        loss = model(torch.ones(2, 4, device="cuda")).mean()
        loss.backward()
        opt.step()
"""


def _formatting(code: str):
    return [f for f in findings(code, "XLA401") if f.message.startswith("formatting")]


def test_a_float_divided_by_a_command_line_value_is_a_host_value():
    assert _formatting(ARGPARSE.format(extra="")) == []


def test_an_argument_whose_type_converter_is_not_a_builtin_is_not_trusted():
    code = ARGPARSE.format(extra='parser.add_argument("--t", type=make_tensor)')
    assert len(_formatting(code)) == 1


PARAMETER = """
import torch


def print0(*a):
    print(*a)


def train(model, val_loader, optimizer, device, num_iterations, val_max_steps):
    for step in range(num_iterations + 1):
        val_loss = 0.0
        for _ in range(val_max_steps):
            x, y = val_loader.next_batch()
            _, loss = model(x.to(device), y.to(device))
            val_loss += loss.item()
        val_loss /= val_max_steps
        print0(f"val loss {val_loss}")
        _, loss = model(x.to(device), y.to(device))
        loss.backward()
        optimizer.step()
"""


def test_a_float_divided_by_a_parameter_is_reported_as_a_possible_tensor():
    (f,) = _formatting(PARAMETER)
    assert "`val_loss`" in f.message and "`val_max_steps`" in f.message
    assert "only if" in f.message


def test_the_average_made_inside_a_with_block_is_judged_after_it():
    code = PARAMETER.replace(
        "        val_loss = 0.0\n        for _ in range(val_max_steps):",
        "        with torch.no_grad():\n            val_loss = 0.0\n"
        "            for _ in range(val_max_steps):",
    )
    code = code.replace(
        "            x, y = val_loader.next_batch()\n"
        "            _, loss = model(x.to(device), y.to(device))\n"
        "            val_loss += loss.item()\n"
        "        val_loss /= val_max_steps\n",
        "                x, y = val_loader.next_batch()\n"
        "                _, loss = model(x.to(device), y.to(device))\n"
        "                val_loss += loss.item()\n"
        "            val_loss /= val_max_steps\n",
    )
    assert "with torch.no_grad():" in code and "            val_loss /= val_max_steps" in code
    (f,) = _formatting(code)
    assert "only if `val_max_steps` is one" in f.message
    # With a suppressing block the binding inside may not have run: no binding dominates the
    # read, so every binding of the frame is judged (all host values but the parameter's).
    suppressed = code.replace("torch.no_grad()", "contextlib.suppress(ValueError)")
    (g,) = _formatting(suppressed)
    assert "only if `val_max_steps` is one" in g.message


OWN_PARSE_ARGS = """
import argparse


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gradient_accumulation_steps", type=int, default=1)
    args = parser.parse_args()
    return args


def main(model, loader, optimizer, accelerator):
    args = parse_args()
    train_loss = 0.0
    for batch in loader:
        loss = model(batch).mean()
        avg_loss = accelerator.gather(loss).mean()
        train_loss += avg_loss.item() / args.gradient_accumulation_steps
        loss.backward()
        optimizer.step()
        accelerator.log({"train_loss": train_loss})
        train_loss = 0.0
"""


def test_options_of_the_scripts_own_parse_args_function_are_host_numbers():
    # diffusers' examples (held-out 37): ``train_loss`` is a float (``.item()`` divided by an
    # option), so logging it reads nothing; the ``.item()`` itself is the one read.
    found = findings(OWN_PARSE_ARGS, "XLA401")
    assert ["item()" in f.message for f in found] == [True]
    # A parse_args that returns something else proves nothing about its options.
    other = OWN_PARSE_ARGS.replace("    return args\n", "    return load_config(args)\n")
    assert ["logging call" in f.message for f in findings(other, "XLA401")] == [False, True]


def test_options_of_an_hf_argument_parser_are_host_values():
    # open-instruct's finetune.py (held-out 39): ``args = ArgumentParserPlus((FlatArguments)).parse()``
    # holds command-line values; ``avg_loss`` (an .item() divided by two of them) is a float.
    code = OWN_PARSE_ARGS.replace(
        "    args = parse_args()\n",
        "    parser = HfArgumentParser((TrainArgs,))\n    args = parser.parse()\n",
    )
    found = findings(code, "XLA401")
    assert ["item()" in f.message for f in found] == [True]
