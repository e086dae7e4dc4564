"""The Chat gRPC gateway: routes, provider translators and upstream HTTP."""
