"""The model2vec embedder's own pooling equals ``StaticModel.encode``; an embedder failure in
the middle of a build keeps the stored batches and the build resumes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sleuth import Index, Settings
from sleuth.embed import Model2VecEmbedder, minilm_path, normalise
from sleuth.errors import EmbedderError

TEXTS = [
    "Alfred Hitchcock directed Vertigo in 1958.",
    "",
    "   ",
    "Ünïcödé text, émigré café ✓ — with punctuation!",
    "word " * 3000,  # truncated at the model's max_length
    "a",
    "The river flows north. It floods every spring.",
]


def _static_model(weights: bool, mapping: bool, max_length: int | None):
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
    rng = np.random.default_rng(7)
    size = tokenizer.get_vocab_size()
    rows = size // 2 if mapping else size
    vectors = rng.standard_normal((rows, 24)).astype(np.float16)
    return StaticModel(
        vectors, tokenizer, normalize=True, max_length=max_length,
        weights=rng.uniform(0.1, 2.0, size).astype(np.float32) if weights else None,
        token_mapping=rng.integers(0, rows, size) if mapping else None)


@pytest.mark.parametrize(("weights", "mapping", "max_length"),
                         [(False, False, 512), (True, False, 512), (True, True, None),
                          (False, True, 16)])
def test_model2vec_pooling_equals_static_model(weights: bool, mapping: bool,
                                               max_length: int | None) -> None:
    model = _static_model(weights, mapping, max_length)
    embedder = Model2VecEmbedder("model2vec", model, batch_size=256)
    texts = TEXTS * 60  # several batches
    got = embedder.embed(texts)
    expected = normalise(np.asarray(model.encode(texts), dtype=np.float32))
    assert got.shape == (len(texts), 24) and got.dtype == np.float32
    assert np.abs(got - expected).max() < 2e-3  # model2vec pools in float16
    assert not got[1].any() and not got[2].any()  # no tokens: a zero vector, as encode


class FailingEmbedder:
    """The index's embedder, failing from its ``fail_at``-th call on (a remote endpoint down)."""

    def __init__(self, inner, fail_at: int) -> None:
        self.inner, self.fail_at, self.calls = inner, fail_at, 0
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts, *, on_batch=None):
        self.calls += 1
        if self.calls >= self.fail_at:
            raise EmbedderError("embedding endpoint unreachable")
        return self.inner.embed(texts, on_batch=on_batch)


def test_embedder_failure_mid_build_keeps_batches_and_resumes(tmp_path: Path,
                                                              wiki_corpus: Path) -> None:
    settings = Settings.load()
    folder = tmp_path / "idx"
    with Index.open(folder, settings=settings, create=True) as index:
        failing = FailingEmbedder(index.embedder, fail_at=7)  # 2 calls per batch: 3 batches
        index._embedder = failing
        with pytest.raises(EmbedderError, match="unreachable"):
            index.add([wiki_corpus], batch_sentences=200)
        partial = index.stats()
        assert 0 < partial.documents < 300
        assert partial.manifest["build"]["state"] == "interrupted"
    with Index.open(folder, settings=settings) as index:
        report = index.add([wiki_corpus])
        assert report.resumed and report.unchanged == partial.documents
        assert index.stats().documents == 300
        assert index.stats().manifest["build"]["state"] == "complete"
