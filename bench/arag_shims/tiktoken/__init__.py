"""An offline ``tiktoken`` for A-RAG's code, put first on its ``PYTHONPATH`` by
``bench/arag_baseline.py``.

tiktoken downloads its BPE files on first use and fails offline; ``bpe-openai`` (a Sleuth
dependency) ships the same encodings behind a tiktoken-compatible API. A-RAG calls
``tiktoken.encoding_for_model("gpt-4o")`` (``o200k_base``) and ``get_encoding`` and counts
``len(enc.encode(text))``, so its token counts, budgets and "retrieved tokens" are unchanged;
like tiktoken, ``encode`` refuses special-token text such as ``<|endoftext|>``.
"""

from bpe_openai import Encoding, encoding_for_model, get_encoding, list_encoding_names

__all__ = ["Encoding", "encoding_for_model", "get_encoding", "list_encoding_names"]
