"""Prints about 4 MB to stdout and a single 1 MB line without a newline on stderr."""

import sys

for i in range(40000):
    print(f"line {i:06d} " + "x" * 90)
sys.stderr.write("y" * 1_000_000)
