"""The semantic model rules share: aliases, value kinds, def-use, training loops, the
XLA API each target emits. It sits below ``rules`` and never imports from it."""
