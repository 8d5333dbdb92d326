from trainyard.cli.main import main

raise SystemExit(main())
