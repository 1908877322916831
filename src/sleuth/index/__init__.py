"""An index: the read surface tools, agents and servers hold (``read.ReadIndex``), the writes
(``write.Index``), the ingestion pipeline's parts (``indexing``, ``pipeline``) and copying an
index between backends (``copy``)."""
