"""CMS adapters: one module per CMS, each turning that CMS's request into our change events.

The route names the adapter: ``POST /webhooks/<adapter.name>``. Every adapter
implements ``base.Adapter`` (``authenticate`` with the CMS's own scheme, in
constant time; ``handle`` to publish its events) and the shared endpoint
(``endpoint.AdapterEndpoint``) runs the checks common to all, in one order,
with one set of statuses (docs/webhooks.md, "Adapters"):

- ``github``: GitHub push (``X-Hub-Signature-256``) -> the Git source;
- ``gitlab``: GitLab push (``X-Gitlab-Token``) -> the Git source;
- ``standard``: our own payload through a relay, signed with Standard Webhooks.

A new CMS (Contentful, Sanity, Strapi...) is one module here with a class
that satisfies ``Adapter``, built in ``policy_indexer/runtime/webhook.py``
from its settings; nothing else changes.
"""
