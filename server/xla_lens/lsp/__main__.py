from xla_lens.lsp.server import main

raise SystemExit(main())
