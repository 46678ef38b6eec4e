"""Corpora: source adapters, sealed builds, verification and read access."""
