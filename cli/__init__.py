"""The `nav` command line: agent REPL, gateway, simulator and scenario harness."""

import navagent.core  # noqa: F401 - turns gRPC's fork handlers off before grpc loads
