"""The xla-lens language server (pygls 2 over stdio): diagnostics, code actions,
the convert command and hover, on top of the engine.

Entry point: ``xla_lens.lsp.server.main()`` (``xla-lens serve``, ``python -m xla_lens.lsp``).
"""
