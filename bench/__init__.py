"""Benchmarks: each prints its figures (docs/performance.md records them)."""
