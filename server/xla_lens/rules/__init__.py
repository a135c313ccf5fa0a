"""Rules: pure functions from a parsed script to findings (each with an optional fix)."""
