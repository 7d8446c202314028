"""Which Elasticsearch failures are ``StoreAccessError`` (configuration) and which are not.

Refused credentials and a 403 of the security layer are access errors; a 403 of
a cluster block is not (the data or the cluster is the problem, not the user);
a TLS handshake the server cuts short is transient, not a certificate problem.
The answers against a real TLS endpoint are in
``tests/integration/test_elasticsearch_tls.py``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import ApiError

from store.elasticsearch import ElasticsearchStore
from store.errors import StoreAccessError, StoreError, StoreUnavailableError, TransientStoreError
from store.es_requests import translate

NODE = NodeConfig("https", "es-1.example", 9200)


def answer(status: int, body: dict[str, object]) -> ApiError:
    meta = ApiResponseMeta(status=status, http_version="1.1", headers=HttpHeaders(),
                           duration=0.01, node=NODE)
    error = body.get("error")
    kind = error.get("type", "error") if isinstance(error, dict) else "error"
    return ApiError(str(kind), meta=meta, body=body)


def raising(exc: Exception) -> object:
    raise exc


def test_refused_credentials_name_the_node_and_the_settings_not_the_secret() -> None:
    refused = answer(401, {"error": {"type": "security_exception",
                                     "reason": "unable to authenticate user [elastic]"}})
    with pytest.raises(StoreAccessError) as caught:
        translate("put index template 'x'", raising, refused)
    assert str(caught.value) == (
        "Elasticsearch at https://es-1.example:9200 refused the credentials (401): check "
        "elasticsearch_username/password or elasticsearch_api_key")
    assert caught.value.status == 401


def test_a_security_403_is_an_access_error_naming_what_was_denied() -> None:
    denied = answer(403, {"error": {
        "type": "security_exception",
        "reason": "action [indices:admin/create] is unauthorized for user [indexer]"}})
    with pytest.raises(StoreAccessError) as caught:
        translate("create index for alias 'x-chunks'", raising, denied)
    message = str(caught.value)
    assert message.startswith("Elasticsearch at https://es-1.example:9200 denied create index "
                              "for alias 'x-chunks'"), message
    assert "is unauthorized for user [indexer]" in message and "lacks the privilege" in message


def test_a_cluster_block_403_is_not_an_access_error_but_the_store_unavailable() -> None:
    blocked = answer(403, {"error": {
        "type": "cluster_block_exception",
        "reason": "index [x-chunks-000001] blocked by: [FORBIDDEN/8/index write (api)];"}})
    with pytest.raises(StoreError) as caught:
        translate("bulk", raising, blocked)
    assert not isinstance(caught.value, StoreAccessError)
    # the block lifts, no event is to blame: retried while it lasts
    assert isinstance(caught.value, StoreUnavailableError)
    assert caught.value.status == 403


@pytest.fixture
def hangs_up() -> Iterator[int]:
    """A loopback port that accepts a connection and closes it mid-handshake."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(16)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(listener.getsockname()[1])
    stop.set()
    listener.close()
    thread.join(timeout=5)


def test_a_handshake_cut_short_is_transient_not_a_certificate_problem(hangs_up: int) -> None:
    store = ElasticsearchStore.connect(f"https://127.0.0.1:{hangs_up}", "x", timeout_s=5)
    try:
        with pytest.raises(TransientStoreError) as caught:
            store.ensure_ready()
    finally:
        store.close()
    assert not isinstance(caught.value, StoreAccessError)


def test_connect_needs_a_node() -> None:
    with pytest.raises(ValueError, match="urls is empty"):
        ElasticsearchStore.connect([], "x")
