"""An env read whose value only lands in an attribute nothing reads (the diffusers example
scripts' ``env_local_rank`` copy, held-out 66's audio-diffusion) decides nothing: no finding.
Read anywhere else, the copy matters and the finding stays."""

from tests.helpers import findings

COPY = """
import argparse
import os

from accelerate import Accelerator


def main(args):
    accelerator = Accelerator()
    accelerator.print(args.output_dir)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--output_dir", default="out")
    args = parser.parse_args()
    env_local_rank = int(os.environ.get("LOCAL_RANK", -1))
    if env_local_rank != -1 and env_local_rank != args.local_rank:
        args.local_rank = env_local_rank
    main(args)
"""


def test_a_local_rank_copied_into_an_unread_attribute_is_not_reported():
    assert findings(COPY, "XLA202") == []


def test_the_attribute_read_elsewhere_keeps_the_finding():
    code = COPY.replace(
        "    accelerator.print(args.output_dir)\n",
        "    accelerator.print(args.output_dir)\n    if args.local_rank in (-1, 0):\n"
        "        print('main process')\n",
    )
    assert any("LOCAL_RANK" in f.message for f in findings(code, "XLA202"))


def test_the_value_used_otherwise_keeps_the_finding():
    code = COPY.replace("    main(args)\n", "    print(env_local_rank)\n    main(args)\n")
    assert any("LOCAL_RANK" in f.message for f in findings(code, "XLA202"))
