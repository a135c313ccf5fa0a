"""Raises from a helper function called at module level."""


def explode(n: int) -> int:
    return 10 // n  # CRASH: ZeroDivisionError here


print("about to crash", flush=True)
explode(0)
