"""The Chat gRPC gateway: routes, provider translators and upstream HTTP."""

import navagent.core  # noqa: F401 - turns gRPC's fork handlers off before grpc loads
