"""Benchmarks of Paydesk against a bare baseline app, on PostgreSQL and SQLite (`python -m bench.run`)."""
