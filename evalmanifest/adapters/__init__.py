"""Adapters: the base contract, the registry, and the runtime adapters (docker, kubernetes)."""
