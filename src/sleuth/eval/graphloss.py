"""The A2RAG extraction-loss stress test: hide a growing share of the graph's entities and
measure how retrieval recall degrades, against the hybrid retriever that uses no graph.

For each deletion fraction the same random subset logic is used (numpy, fixed seed), so a
fraction's nodes include those of smaller fractions only by chance; every question's
keyword, semantic and second-hop rankings are computed once and reused.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sleuth.errors import MissingDependency
from sleuth.eval.datasets import Question
from sleuth.eval.metrics import recall_at_k
from sleuth.graph import Graph
from sleuth.index.write import Index
from sleuth.retrieval import HybridRetriever, fuse

FRACTIONS = (0.0, 0.1, 0.2, 0.3, 0.4)


def extraction_loss(index: Index, graph: Graph, questions: Sequence[Question],
                    fractions: Sequence[float] = FRACTIONS, ks: Sequence[int] = (2, 5),
                    seed: int = 0,
                    on_step: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Recall@k of graph and hybrid+graph at each deletion fraction, and of hybrid."""
    scored = [q for q in questions if q.gold_ids]
    base: list[tuple[Question, list[str], list[str], list[str]]] = []
    for q in scored:
        retriever = HybridRetriever(index)
        base.append((q, retriever.keyword(q.question), retriever.semantic(q.question),
                     retriever.second_hop(q.question)))
    doc_of: dict[str, str] = {}

    def recall(ranking: list[str], gold: Sequence[str], k: int) -> float:
        missing = [c for c in ranking if c not in doc_of]
        if missing:
            doc_of.update({c.chunk_id: c.doc_id for c in index.read(missing).chunks})
        return recall_at_k(list(dict.fromkeys(doc_of[c] for c in ranking if c in doc_of)),
                           gold, k)

    hybrid = {k: statistics.fmean(recall(fuse([kw, sem, hop]), q.gold_ids, k)
                                  for q, kw, sem, hop in base) for k in ks}
    rows = []
    for fraction in fractions:
        hidden = graph.simulate_loss(fraction, seed)
        if on_step:
            on_step(f"{fraction:.0%} of the entities hidden ({hidden})")
        graph_r: dict[int, list[float]] = {k: [] for k in ks}
        fused_r: dict[int, list[float]] = {k: [] for k in ks}
        for q, kw, sem, hop in base:
            ranking = graph.rank(q.question, top_k=20)
            fused = fuse([kw, sem, hop, ranking])
            for k in ks:
                graph_r[k].append(recall(ranking, q.gold_ids, k))
                fused_r[k].append(recall(fused, q.gold_ids, k))
        rows.append({"fraction": fraction, "hidden": hidden,
                     **{f"graph@{k}": statistics.fmean(graph_r[k]) for k in ks},
                     **{f"hybrid+graph@{k}": statistics.fmean(fused_r[k]) for k in ks}})
    graph.simulate_loss(0.0)
    return {"questions": len(base), "ks": list(ks), "seed": seed,
            "hybrid": {f"hybrid@{k}": v for k, v in hybrid.items()}, "rows": rows}


def plot(result: dict[str, Any], path: Path) -> Path:
    """Recall@k against the share of entities deleted, hybrid as the flat baseline."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency("matplotlib", "eval") from None
    fractions = [100 * r["fraction"] for r in result["rows"]]
    fig, ax = plt.subplots(figsize=(6, 4))
    for k in result["ks"]:
        ax.plot(fractions, [100 * r[f"hybrid+graph@{k}"] for r in result["rows"]], "o-",
                label=f"hybrid+graph R@{k}")
        ax.plot(fractions, [100 * r[f"graph@{k}"] for r in result["rows"]], "s--",
                label=f"graph R@{k}")
        ax.axhline(100 * result["hybrid"][f"hybrid@{k}"], linestyle=":", color="grey")
        ax.annotate(f"hybrid R@{k}", (fractions[-1], 100 * result["hybrid"][f"hybrid@{k}"]),
                    fontsize=8, ha="right", va="bottom")
    ax.set_xlabel("entities deleted (%)")
    ax.set_ylabel("recall (%)")
    ax.set_title(f"Extraction loss ({result['questions']} questions)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write(result: dict[str, Any], folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "extraction_loss.json"
    data.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return data, plot(result, folder / "extraction_loss.png")
