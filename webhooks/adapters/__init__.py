"""CMS adapters: one module per CMS, each turning that CMS's request into our change events.

The route names the adapter: ``POST /webhooks/<adapter.name>``. Every adapter
implements ``base.Adapter`` (``authenticate`` with the CMS's own scheme, in
constant time; ``handle`` to publish its events) and the shared endpoint
(``endpoint.AdapterEndpoint``) runs the checks common to all, in one order,
with one set of statuses (docs/webhooks.md, "Adapters"):

- ``github``: GitHub push (``X-Hub-Signature-256``) -> the Git source;
- ``gitlab``: GitLab push (``X-Gitlab-Token``) -> the Git source;
- ``standard``: our own payload through a relay, signed with Standard Webhooks;
- ``contentful``, ``sanity``, ``strapi``: a CMS's own webhook -> its read API.

Each module declares itself once, as ``SPEC`` (``spec.AdapterSpec``: its name,
its settings section ``webhook_<name>_*``, its factory and, if a sender can be
imitated, its signer), and ``registry.ADAPTERS`` lists every ``SPEC``. A new
CMS is one module here with a class that satisfies ``Adapter`` and its
``SPEC``, its entry in ``registry.ADAPTERS`` and its settings in
``policy_indexer/settings/adapters.py``; the route, the on/off rule and the messages
that list the adapters' settings follow from the registry.
"""
