"""The embedding cache says an Elasticsearch failure by the store's rule, in its own tree.

``foundation.es_errors.call`` is the one translation: the cache names which of
its errors each kind becomes and gets refused credentials, a security 403, a
blocked index and the transient statuses said as the store says them.
"""

from __future__ import annotations

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import ApiError

from embeddings.cache_elasticsearch import _call
from embeddings.errors import EmbeddingCacheError, TransientEmbeddingCacheError
from foundation.es_errors import ErrorTree, call
from store.errors import StoreError
from store.es_requests import translate

NODE = NodeConfig("https", "es-1.example", 9200)


def answer(status: int, error_type: str) -> ApiError:
    meta = ApiResponseMeta(status=status, http_version="1.1", headers=HttpHeaders(),
                           duration=0.01, node=NODE)
    return ApiError(error_type, meta=meta, body={"error": {"type": error_type, "reason": "r"}})


def raising(exc: Exception) -> object:
    raise exc


@pytest.mark.parametrize(("status", "error_type", "kind"), [
    (401, "security_exception", EmbeddingCacheError),
    (403, "security_exception", EmbeddingCacheError),
    (403, "cluster_block_exception", TransientEmbeddingCacheError),
    (429, "es_rejected_execution_exception", TransientEmbeddingCacheError),
    (503, "unavailable", TransientEmbeddingCacheError),
    (400, "mapper_parsing_exception", EmbeddingCacheError),
])
def test_the_cache_says_each_failure_as_the_store_does(status: int, error_type: str,
                                                       kind: type[Exception]) -> None:
    with pytest.raises(EmbeddingCacheError) as cache_error:
        _call("mget 1 keys of 'm'", raising, answer(status, error_type))
    with pytest.raises(StoreError) as store_error:
        translate("embedding cache: mget 1 keys of 'm'", raising, answer(status, error_type))
    assert type(cache_error.value) is kind
    assert str(cache_error.value) == str(store_error.value)
    if status in (401, 403) and error_type == "security_exception":
        assert "elasticsearch_api_key" in str(cache_error.value)  # the setting to fix


class NewClientError(Exception):
    def __init__(self, message: str, status: int | None, kind: str) -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


def test_a_new_client_names_its_tree_once_and_gets_every_rule() -> None:
    tree = ErrorTree(*(lambda m, s, k=k: NewClientError(m, s, k)
                       for k in ("error", "transient", "blocked", "access")))
    said = {}
    for status, error_type in [(401, "security_exception"), (403, "cluster_block_exception"),
                               (502, "bad_gateway"), (404, "index_not_found_exception")]:
        with pytest.raises(NewClientError) as caught:
            call(tree, "read", raising, answer(status, error_type))
        said[status] = (caught.value.kind, caught.value.status)
    assert said == {401: ("access", 401), 403: ("blocked", 403), 502: ("transient", 502),
                    404: ("error", 404)}
