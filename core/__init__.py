"""Provider-neutral model, wire contract and the client-side agent."""
