"""Every adapter, listed once: each module's ``SPEC``, in the order routes are listed.

A new adapter is its module (with its ``SPEC``), its entry here and its
``webhook_<name>_*`` settings; routes, the on/off rule and the messages that
list the adapters' settings are derived from this tuple
(``policy_indexer/runtime/webhook.py``).
"""

from __future__ import annotations

from webhooks.adapters import contentful, github, gitlab, sanity, standard, strapi
from webhooks.adapters.spec import AdapterSpec

ADAPTERS: tuple[AdapterSpec, ...] = (
    github.SPEC, gitlab.SPEC, standard.SPEC, contentful.SPEC, sanity.SPEC, strapi.SPEC,
)
