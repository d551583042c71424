"""The sections of scripts/bench_group_norm.py (the entry point, which puts scripts/ on sys.path)."""
