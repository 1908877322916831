"""A diagnostic agent for the question "is it the evidence or the request?" (BENCHMARKS §30).

On the PostgreSQL manual naive-rag, which answers in one request with no tools offered,
beats the default agent on the questions whose answer both were shown. This script
registers an agent that is not a product agent and runs ``sleuth eval run`` with it, so
the two can be told apart on the same questions:

- ``hybrid-answer``: the default agent's first search (``hybrid_search`` with the whole
  question: the passage ranking, a long chunk shown by its best runs of sentences), then
  one answer-only request with naive-rag's prompt (no tools, no facts-first field, none of
  the default agent's checks).

Any ``sleuth eval run`` option passes through::

    python bench/diagnostics/answer_request.py eval run \\
        --dataset bench/sets/pgdocs/questions.json --limit 72 \\
        --index "$(python bench/dev_index.py pgdocs)" \\
        --agent hybrid-answer --workers 1 --resume --output /tmp/v45/exp/pg72
"""

from __future__ import annotations

import sys

from sleuth.agent.variants import Variant, register_variant, tool_loop
from sleuth.cli.main import main

if __name__ == "__main__":
    register_variant(Variant("hybrid-answer", "diagnostic: hybrid_search, then one "
                             "answer-only request with naive-rag's prompt",
                             tool_loop(retrieve_first=5, first_tool="hybrid_search"),
                             prompt="naive_rag"))
    main(sys.argv[1:])
