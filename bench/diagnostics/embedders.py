"""The embedders Sleuth can ship, side by side (issue 38): throughput on a real manual and
retrieval quality on the 2Wiki and real-documentation dev sets.

Candidates: the bundled all-MiniLM-L6-v2 on torch (sentence-transformers, batch 64), the same
weights on ONNX Runtime (fp32, exported once; batches of 16 and 32), the same exported to
int8 (onnxruntime dynamic quantization), and the model2vec static model distilled from it
(the ``fast`` preset).

- **throughput**: sentences per second on 6,000 sentences of the PostgreSQL manual, embedded
  as indexing embeds them (title prefix), with the machine's batch threads;
- **agreement**: cosine of each candidate's vectors with torch's on those sentences;
- **quality**: semantic-only document recall@5 (each question embedded, the corpus's
  sentences ranked by cosine, documents by their best sentence), exact, brute force: the
  570 2Wiki dev questions over its corpus, and the 103 answerable questions of
  ``bench/sets/pgdocs`` over the whole manual (its HTML read by Sleuth's own reader).

    python bench/diagnostics/embedders.py                  # all (model2vec distils once)
    python bench/diagnostics/embedders.py --skip-quality   # throughput only

The manual is Debian's ``postgresql-doc-15`` (installed with apt-get when missing); 2Wiki
comes from the data root (``--data``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402
    DEV_CORPORA,
    OUT_DIR,
    REPO,
    add_data_option,
    data_root,
    ensure_debian_docs,
    machine_facts,
    md_table,
    wiki_corpus,
    wiki_questions,
    write_json,
)

from sleuth import Settings  # noqa: E402
from sleuth.embed import (  # noqa: E402
    Model2VecEmbedder,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    _load_model2vec,
    _load_sentence_transformer,
    minilm_onnx,
    minilm_path,
    model2vec_path,
)
from sleuth.index.indexing import embed_inputs  # noqa: E402
from sleuth.ingest import iter_chunks, iter_documents  # noqa: E402
from sleuth.text.threads import batch_work, configure_threads  # noqa: E402

MANUAL = Path(DEV_CORPORA["pgdocs"].source)
PGDOCS = REPO / "bench" / "sets" / "pgdocs" / "questions.json"
Embed = Callable[[Sequence[str]], np.ndarray]


def candidates() -> dict[str, Any]:
    folder = minilm_path()
    torch_model = _load_sentence_transformer(str(folder), "cpu")
    onnx = minilm_onnx(folder)
    int8 = Path(tempfile.gettempdir()) / "sleuth-minilm-int8.onnx"
    if not int8.is_file():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(onnx), str(int8), weight_type=QuantType.QInt8)
    out: dict[str, Any] = {
        "torch b64": SentenceTransformerEmbedder("minilm", torch_model, 64),
        "onnx fp32 b16": OnnxEmbedder("minilm", onnx, folder, 256, 16),
        "onnx fp32 b32": OnnxEmbedder("minilm", onnx, folder, 256, 32),
        "onnx int8 b16": OnnxEmbedder("minilm-int8", int8, folder, 256, 16),
    }
    try:
        out["model2vec"] = Model2VecEmbedder("model2vec",
                                             _load_model2vec(str(model2vec_path())), 1024)
    except Exception as exc:  # noqa: BLE001 - the fast extra may be missing
        print(f"  model2vec unavailable: {exc}")
    return out


def embed(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    with batch_work():
        return np.asarray(embedder.embed(texts))


def manual_sentences(limit: int) -> list[str]:
    ensure_debian_docs(MANUAL, DEV_CORPORA["pgdocs"].package or "")
    files = sorted(MANUAL.glob("*.html"))[::10]
    texts: list[str] = []
    for doc in iter_documents(files):
        for chunk in iter_chunks(doc, 1000):
            texts += embed_inputs(doc, [chunk])
    return texts[:limit]


def throughput(models: dict[str, Any], texts: list[str]) -> dict[str, dict[str, float]]:
    reference = embed(models["torch b64"], texts)
    out = {}
    for name, model in models.items():
        embed(model, texts[:64])  # warm
        started = time.perf_counter()
        vectors = embed(model, texts)
        took = time.perf_counter() - started
        agree = (vectors * reference).sum(axis=1) if vectors.shape == reference.shape else \
            np.array([np.nan])
        out[name] = {"per_s": len(texts) / took, "cos_min": float(np.nanmin(agree)),
                     "cos_mean": float(np.nanmean(agree))}
        print(f"  {name}: {out[name]['per_s']:.0f} sentences/s, cosine to torch "
              f"{out[name]['cos_mean']:.5f} (min {out[name]['cos_min']:.5f})", flush=True)
    return out


def recall_at(models: dict[str, Any], sentences: list[str], owners: list[str],
              questions: list[tuple[str, set[str]]], k: int = 5) -> dict[str, float]:
    """Document recall@k of semantic search alone, for each model."""
    owner_ids = {d: i for i, d in enumerate(dict.fromkeys(owners))}
    doc_of = np.array([owner_ids[d] for d in owners])
    names = list(owner_ids)
    out = {}
    for name, model in models.items():
        if name.startswith("onnx fp32 b32"):
            continue  # the same vectors as b16
        started = time.perf_counter()
        matrix = embed(model, sentences)
        queries = np.asarray(model.embed([q for q, _ in questions]))
        scores = queries @ matrix.T
        hits = 0.0
        for row, (_, gold) in zip(scores, questions, strict=True):
            best = np.full(len(names), -np.inf)
            np.maximum.at(best, doc_of, row)
            top = {names[i] for i in np.argsort(-best)[:k]}
            hits += len(top & gold) / len(gold)
        out[name] = 100 * hits / len(questions)
        print(f"  {name}: R@{k} {out[name]:.1f} ({time.perf_counter() - started:.0f} s)",
              flush=True)
    return out


def twowiki(data: Path) -> tuple[list[str], list[str], list[tuple[str, set[str]]]]:
    records = json.loads(wiki_corpus(data).read_text())
    sentences, owners = [], []
    tmp = Path(tempfile.mkdtemp()) / "corpus.json"
    tmp.write_text(json.dumps(records))
    for doc in iter_documents([tmp]):
        for chunk in iter_chunks(doc, 1000):
            texts = embed_inputs(doc, [chunk])
            sentences += texts
            owners += [doc.doc_id] * len(texts)
    questions = [(q["question"], set(q["supporting_passage_ids"]))
                 for q in json.loads(wiki_questions(data).read_text())]
    return sentences, owners, questions


def pgdocs(data: Path) -> tuple[list[str], list[str], list[tuple[str, set[str]]]]:
    ensure_debian_docs(MANUAL, DEV_CORPORA["pgdocs"].package or "")
    sentences, owners = [], []
    for doc in iter_documents([MANUAL]):
        for chunk in iter_chunks(doc, 1000):
            texts = embed_inputs(doc, [chunk])
            sentences += texts
            owners += [doc.doc_id] * len(texts)
    questions = [(q["question"], set(q["supporting_passage_ids"]))
                 for q in json.loads(PGDOCS.read_text()) if q.get("answerable", True)]
    return sentences, owners, questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=6000)
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    add_data_option(parser)
    args = parser.parse_args()
    data = data_root(args.data)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    configure_threads(Settings.load().threads)
    models = candidates()
    result: dict[str, Any] = {"machine": machine_facts()}
    if not args.skip_throughput:
        print("throughput:", flush=True)
        result["throughput"] = throughput(models, manual_sentences(args.sentences))
    if not args.skip_quality:
        for label, load in (("2wiki", twowiki), ("pgdocs", pgdocs)):
            sentences, owners, questions = load(data)
            print(f"{label}: {len(sentences):,} sentences, {len(questions)} questions",
                  flush=True)
            result[f"recall_{label}"] = recall_at(models, sentences, owners, questions)
    nan = {"per_s": float("nan"), "cos_mean": float("nan")}
    rows = [[name, f"{result.get('throughput', {}).get(name, nan)['per_s']:.0f}",
             f"{result.get('throughput', {}).get(name, nan)['cos_mean']:.5f}",
             f"{result.get('recall_2wiki', {}).get(name, float('nan')):.1f}",
             f"{result.get('recall_pgdocs', {}).get(name, float('nan')):.1f}"]
            for name in models]
    print(md_table(["embedder", "sentences/s", "cosine to torch", "2Wiki R@5",
                    "pgdocs R@5"], rows))
    name = "embedders" + ("-quality" if args.skip_throughput else "") + \
        ("-throughput" if args.skip_quality else "")
    print(f"written {write_json(OUT_DIR / f'{name}.json', result)}")


if __name__ == "__main__":
    main()
