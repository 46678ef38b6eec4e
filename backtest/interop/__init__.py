"""Importers and exporters for other benchmarks' file formats (``sqb``: the reference release)."""
