"""The folder backend: SQLite (WAL) with FTS5 for rows and keyword candidates, memory-mapped
vector segments, the approximate index, leases, sessions and the graph tables."""
