"""The PostgreSQL backend: rows, tsvector keyword candidates, pgvector vectors and its
approximate index, sessions and the graph tables, in one database."""
