"""The `nav` command line: agent REPL, gateway, simulator and scenario harness."""
