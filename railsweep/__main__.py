from railsweep.cli import main

raise SystemExit(main())
