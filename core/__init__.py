"""Provider-neutral model, wire contract and the client-side agent.

Importing any `navagent` package turns gRPC's fork handlers off before grpc
loads (grpc reads `GRPC_ENABLE_FORK_SUPPORT` once, at import). With them on,
grpcio >= 1.81 restarts its poller in every forked child while gRPC threads
are busy; a child that closes its descriptors before `exec` (pexpect,
`pty.fork`, `subprocess` where it cannot vfork, as on macOS) then crashes with
SIGSEGV before it runs the program (grpc/grpc#43055). Nothing here relies on
gRPC surviving a fork: gateway workers are started with `spawn`. A value the
user set is kept.
"""

import os

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
