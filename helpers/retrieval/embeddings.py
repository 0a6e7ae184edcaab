"""Text embeddings: all-MiniLM-L6-v2 run in numpy (helpers.retrieval.minilm, default) or Voyage AI when a key is set. Taught in 05_vector_memory, "Embeddings as geometry"."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from helpers.config import ConfigError, Settings, load_settings
from helpers.retrieval.minilm import LocalMiniLM, check_texts, gelu, model_dir, normalise_rows

if TYPE_CHECKING:  # imported lazily at run time; only the type checker needs it here
    import httpx2

__all__ = [
    "Embedder",
    "LocalMiniLM",
    "VoyageEmbedder",
    "get_embedder",
    "embed_query",
    "EmbeddingError",
    "cosine",
    "similarity_matrix",
    "gelu",
    "model_dir",
]

VOYAGE_URL = "https://api.voyageai.com/v1/embeddings"
MAX_RETRY_WAIT_S = 60.0  # longest wait between Voyage attempts, whatever Retry-After asks


class EmbeddingError(RuntimeError):
    """The hosted embedder could not embed (unreachable, timed out, or an HTTP error after its retries)."""


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows of width `dim`. Taught in 05_vector_memory."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed a batch: shape (len(texts), dim), float32, unit-length rows."""
        ...

    def embed_one(self, text: str) -> np.ndarray:
        """Embed one text: shape (dim,)."""
        ...


# --- Voyage AI (hosted, optional) ---------------------------------------------------------------


class VoyageEmbedder:
    """Voyage AI embeddings over HTTPS; used only when VOYAGE_API_KEY is set. Taught in 05_vector_memory."""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        model: str = "voyage-3.5-lite",
        dim: int = 1024,
        input_type: str | None = "document",
        http_client: httpx2.Client | None = None,
        url: str = VOYAGE_URL,
        batch_size: int = 128,
        max_retries: int = 3,
        timeout_s: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """Check the settings; no connection is opened until the first `embed`. `sleep` waits between retries."""
        key = (api_key if api_key is not None else load_settings().voyage_api_key or "").strip()
        if not key:
            raise ConfigError("VoyageEmbedder needs an API key: set VOYAGE_API_KEY (or pass api_key=)")
        if input_type not in (None, "query", "document"):
            raise ConfigError(f"input_type must be None, 'query' or 'document', got {input_type!r}")
        self._api_key = key
        self.name = self.model = model
        self.dim = dim
        self.input_type = input_type
        self.url = url
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self._client = http_client
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"VoyageEmbedder(model={self.model!r}, dim={self.dim}, input_type={self.input_type!r})"

    def _http(self) -> httpx2.Client:
        if self._client is None:
            import httpx2

            self._client = httpx2.Client(timeout=self.timeout_s)
        return self._client

    def request_body(self, texts: list[str], input_type: str | None = None) -> dict[str, Any]:
        """The JSON body sent to the embeddings endpoint for one batch."""
        body: dict[str, Any] = {"input": list(texts), "model": self.model, "input_type": input_type or self.input_type}
        if self.dim != 1024:  # 1024 is the model's default size; others must be asked for
            body["output_dimension"] = self.dim
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST one batch, retrying 429, 5xx, connection errors and timeouts with backoff (honouring Retry-After)."""
        import httpx2

        headers = {"Authorization": f"Bearer {self._api_key}"}
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self._http().post(self.url, json=body, headers=headers)
            except httpx2.TransportError as exc:  # refused, reset, DNS, read/connect timeouts
                if last:
                    raise EmbeddingError(
                        f"Voyage AI could not be reached after {attempts} attempts "
                        f"({type(exc).__name__}: {exc}); check the network, or set EMBEDDER=local "
                        "to embed with the local MiniLM model"
                    ) from None
                self._sleep(_backoff(attempt))
                continue
            if response.status_code in (401, 403):
                raise ConfigError(
                    f"Voyage AI rejected the key (HTTP {response.status_code}): check VOYAGE_API_KEY, "
                    "or set EMBEDDER=local to use the local MiniLM model"
                )
            if (response.status_code == 429 or response.status_code >= 500) and not last:
                self._sleep(_retry_after(response.headers.get("retry-after"), attempt))
                continue
            if response.status_code >= 400:
                raise EmbeddingError(
                    f"Voyage AI answered HTTP {response.status_code} after {attempt + 1} attempt(s): "
                    f"{response.text[:200]}; set EMBEDDER=local to embed with the local MiniLM model"
                )
            return response.json()
        raise AssertionError("unreachable")  # pragma: no cover

    def embed(self, texts: list[str], *, input_type: str | None = None) -> np.ndarray:
        """Embed texts in batches; `input_type` ("query" or "document") overrides the default for this call."""
        texts = check_texts(texts)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            data = self._post(self.request_body(texts[start : start + self.batch_size], input_type))["data"]
            rows.extend(item["embedding"] for item in sorted(data, key=lambda item: item["index"]))
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise_rows(np.asarray(rows, dtype=np.float32))

    def embed_one(self, text: str, *, input_type: str | None = None) -> np.ndarray:
        """Embed a single text: shape (dim,)."""
        return self.embed([text], input_type=input_type)[0]

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query (input_type="query": Voyage embeds questions and documents differently)."""
        return self.embed([text], input_type="query")[0]


def _backoff(attempt: int) -> float:
    """Exponential wait before retry number `attempt + 1`: 1, 2, 4, ... seconds (capped)."""
    return min(2.0**attempt, 20.0)


def _retry_after(header: str | None, attempt: int) -> float:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP-date), else the backoff; capped."""
    wait: float | None = None
    if header and header.strip():
        try:
            wait = float(header)
        except ValueError:
            try:
                when = parsedate_to_datetime(header)
            except (TypeError, ValueError, IndexError):
                when = None
            if when is not None:
                when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
                wait = (when - datetime.now(timezone.utc)).total_seconds()
    if wait is None or wait != wait:  # missing, unparseable or NaN
        wait = _backoff(attempt)
    return min(max(wait, 0.0), MAX_RETRY_WAIT_S)


# --- choosing an embedder, comparing vectors ----------------------------------------------------


@functools.lru_cache(maxsize=1)
def shared_local() -> LocalMiniLM:
    """One LocalMiniLM per process (its weights load on first embed, not here)."""
    return LocalMiniLM()


def get_embedder(settings: Settings | Mapping[str, str] | None = None) -> Embedder:
    """Voyage if VOYAGE_API_KEY is set and EMBEDDER is not "local", else local MiniLM. Taught in 05_vector_memory.

    `settings`: a `Settings`, or a mapping of raw settings (like the environment); default `load_settings()`,
    which reads the environment and `.env`. Nothing is exported to `os.environ`.
    """
    if settings is None:
        settings = load_settings()
    elif not isinstance(settings, Settings):
        settings = load_settings(env=dict(settings))
    if settings.voyage_api_key and settings.embedder != "local":
        return VoyageEmbedder(api_key=settings.voyage_api_key, max_retries=settings.max_retries)
    return shared_local()


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """Embed a search query: as a query where the embedder tells queries from documents (Voyage), else as text."""
    method = getattr(embedder, "embed_query", None)
    return method(text) if callable(method) else embedder.embed([text])[0]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two vectors (0.0 if either is all zeros). Taught in 05_vector_memory."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"cosine needs two vectors of the same length, got {a.size} and {b.size}")
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / denominator if denominator else 0.0


def similarity_matrix(texts: list[str], embedder: Embedder | None = None) -> np.ndarray:
    """Pairwise cosine similarities of `texts`, shape (n, n). Taught in 05_vector_memory."""
    vectors = (embedder or get_embedder()).embed(check_texts(texts))
    return (vectors @ vectors.T).astype(np.float32)
