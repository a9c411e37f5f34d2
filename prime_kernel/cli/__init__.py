"""The `prime-agent` command line: the same daemon, headless."""
