"""Runs until it is cancelled: says it is ready, then sleeps in a loop (no torch import, so
the cancel tests stay fast)."""

import time

print("ready", flush=True)
while True:
    time.sleep(0.05)
