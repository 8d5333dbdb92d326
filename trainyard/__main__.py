from trainyard.cli.main import console

raise SystemExit(console())
