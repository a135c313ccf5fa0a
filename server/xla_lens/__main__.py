from xla_lens.cli import main

raise SystemExit(main())
