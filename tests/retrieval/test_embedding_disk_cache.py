"""The embedding cache on disk (helpers.retrieval.minilm.DISK_CACHE_ENV): a batch computed in one process is read, not
recomputed, in the next, with the very same bits; a damaged or foreign file is computed anew; unset, nothing is
written. The test suite turns it on for its whole run (conftest.py)."""

import numpy as np
import pytest

from helpers.retrieval.minilm import DISK_CACHE_ENV, LocalMiniLM

TEXTS = ["My gym locker combination is 4172", "What is the combination for my gym locker?"]


def _never(texts):
    raise AssertionError(f"recomputed {texts!r}: the disk cache should have served it")


def test_a_second_model_reads_the_first_ones_batch_bit_for_bit(tmp_path, monkeypatch):
    monkeypatch.setenv(DISK_CACHE_ENV, str(tmp_path))
    first = LocalMiniLM().embed(TEXTS)
    assert len(list(tmp_path.rglob("*.npy"))) == 1
    second = LocalMiniLM()  # a new process's model: an empty in-memory cache
    monkeypatch.setattr(second, "_embed_batches", _never)
    assert second.embed(TEXTS).tobytes() == first.tobytes()
    with pytest.raises(AssertionError, match="recomputed"):
        second.embed(list(reversed(TEXTS)))  # another batch (order counts) is not in the cache


def test_a_damaged_file_is_computed_again_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv(DISK_CACHE_ENV, str(tmp_path))
    first = LocalMiniLM().embed(TEXTS)
    (path,) = tmp_path.rglob("*.npy")
    path.write_bytes(b"not an array")
    again = LocalMiniLM().embed(TEXTS)
    assert again.tobytes() == first.tobytes()
    assert np.load(path).tobytes() == first.tobytes()
    np.save(path, np.zeros((1, 3), dtype=np.float32))  # the wrong shape: never served
    assert LocalMiniLM().embed(TEXTS).tobytes() == first.tobytes()


def test_unset_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(DISK_CACHE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    LocalMiniLM().embed(TEXTS)
    assert not list(tmp_path.rglob("*.npy"))
