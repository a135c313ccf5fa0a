import gc

# Nothing to collect while the server's modules load; lsp.server.main switches it back on.
gc.disable()

from xla_lens.lsp.server import main  # noqa: E402

raise SystemExit(main())
