"""Combee: scale prompt learning with parallel map, augmented shuffle and scan aggregation."""

__version__ = "0.1.0"
