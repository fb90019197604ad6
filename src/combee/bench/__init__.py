"""Benchmarks: training wall time, idle fraction and client CPU against the simulated server."""
