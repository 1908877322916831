"""The real 2WikiMultihopQA index (MiniLM), built once and cached for the benchmarks."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from _common import CORPUS_2WIKI, STORE_SOURCES, source_fingerprint

from sleuth import Index
from sleuth.embed import Embedder, load_embedder
from sleuth.settings import Settings


def load_minilm() -> tuple[Embedder, float]:
    """The default (bundled MiniLM) embedder and its load time in seconds."""
    t0 = time.perf_counter()
    embedder = load_embedder(Settings.load().embed)
    return embedder, time.perf_counter() - t0


def _meta_path(index: Path) -> Path:
    return index.parent / (index.name + ".bench.json")


def ensure_2wiki_index(index: Path, embedder: Embedder, rebuild: bool = False,
                       corpus: Path = CORPUS_2WIKI, log: Any = print
                       ) -> tuple[dict[str, Any], bool]:
    """Open-or-build the index of ``corpus`` at ``index``. Returns (build info, reused)."""
    st = corpus.stat()
    params = {"corpus": str(corpus), "size": st.st_size, "embedder": embedder.name,
              "sleuth_sources": source_fingerprint(STORE_SOURCES + ("index.py", "embed.py"))}
    meta = _meta_path(index)
    if not rebuild and meta.is_file() and (index / "manifest.json").is_file():
        info = json.loads(meta.read_text())
        manifest = json.loads((index / "manifest.json").read_text())
        if info.get("params") == params and manifest.get("build", {}).get("state") == "complete":
            return info["build"], True
    if index.exists():
        shutil.rmtree(index)
    meta.unlink(missing_ok=True)
    index.parent.mkdir(parents=True, exist_ok=True)
    log(f"building the 2Wiki index at {index} (MiniLM, full corpus; a few minutes on 2 cores)")
    t0 = time.perf_counter()
    with Index.open(index, create=True, embedder=embedder) as ix:
        report = ix.add([corpus])
        stats = ix.stats()
    seconds = time.perf_counter() - t0
    build = {"seconds": round(seconds, 1), "documents": stats.documents,
             "chunks": stats.chunks, "sentences": stats.sentences,
             "sentences_per_s": round(stats.sentences / seconds, 1),
             "skipped": len(report.skipped), "duplicates": len(report.duplicates)}
    meta.write_text(json.dumps({"params": params, "build": build}, indent=2))
    log(f"built: {build}")
    return build, False
