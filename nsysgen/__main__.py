from nsysgen.cli import main

raise SystemExit(main())
