"""Loops forever (with a forked child doing the same) until cancelled."""

import os
import time

child = os.fork()
print(f"parent {os.getpid()} child {child if child else os.getpid()}", flush=True)
while True:
    time.sleep(0.05)
