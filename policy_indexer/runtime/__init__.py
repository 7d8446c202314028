"""The composition root: every backend, source, server and part is built here from one Settings.

Commands (``policy_indexer.commands``) parse options, call one function of this
package, and print. Nothing below this package imports it, and nothing imports
``policy_indexer.commands`` (``tests/unit/architecture/test_import_boundaries.py``).

- ``backends``: what a mode is made of: the store, the run log and lease, the
  event transport (publisher, consumer, dead letters). One class per mode
  (``EmbeddedBackends``: SQLite + the local queue; ``KafkaBackends``: Kafka +
  Elasticsearch), chosen once by ``open_backends(settings)``.
- ``sources``: the configured source (CMS API, folder, change log).
- ``parts`` and ``supervisor``: the ``Part`` protocol (start, stop, alive, error) and
  the one supervisor that owns threads, processes, signals and shutdown order.
- ``http``: ``/metrics`` and ``/healthz`` for every long-running process; ``probes``:
  what ``/readyz`` and ``/healthz`` answer (the readiness grace, the worker's heartbeat).
- ``faults``: the crash hook for tests (installed only by a test entry point).
- ``worker``, ``jobs``, ``embedded``, ``kafka``, ``status``: the processes and
  one-shot jobs that commands start.
"""
