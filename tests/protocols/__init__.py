"""Protocols that exist only for tests (see docs/adding-a-protocol.md)."""
