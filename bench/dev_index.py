"""Build (on first use) or find the cached index of a dev corpus and print its folder.

The index every bench uses when it is given no ``--index`` (``_common.dev_index``): built
once with ``sleuth index`` (and ``sleuth graph build`` with ``--graph``) into
``~/.cache/sleuth/bench/<name>-<embedder>[-graph]/`` (``$SLEUTH_BENCH_CACHE`` moves it),
resumed when a build was interrupted, rebuilt when the corpus or the embedder changes. Use
it to point a ``sleuth`` command at the same index::

    python bench/dev_index.py medical
    sleuth eval run --dataset bench/sets/pgdocs --index "$(python bench/dev_index.py pgdocs)"
    python bench/dev_index.py 2wiki --graph          # with the knowledge graph
    python bench/dev_index.py --list                 # what is cached, and its state
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import DEV_CORPORA, add_data_option, bench_cache, dev_index


def cached() -> list[str]:
    """One line per cached index: folder, state, corpus, seconds of its last build."""
    lines = []
    for meta_path in sorted(bench_cache().glob("*.json")):
        meta = json.loads(meta_path.read_text())
        key = meta.get("key")
        if not isinstance(key, dict):
            continue  # another cache's file
        lines.append(f"{meta_path.with_suffix('')}  {meta.get('state')}  {key.get('source')}  "
                     f"{meta.get('seconds', '-')} s")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", choices=list(DEV_CORPORA), help="the dev corpus")
    parser.add_argument("--embedder", default=None,
                        help="sleuth index --embedder value [the corpus's own: model2vec for "
                        "financebench, minilm for the others]")
    parser.add_argument("--graph", action="store_true", help="also build the knowledge graph")
    parser.add_argument("--list", action="store_true", help="list the cached indexes")
    add_data_option(parser)
    args = parser.parse_args()
    if args.list:
        print("\n".join(cached()) or f"no dev index cached in {bench_cache()}")
        return
    if args.name is None:
        parser.error("name a dev corpus, or --list")
    print(dev_index(args.name, data=args.data, embedder=args.embedder, graph=args.graph))


if __name__ == "__main__":
    main()
