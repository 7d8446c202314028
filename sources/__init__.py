"""What the source (the policy CMS, a Git checkout, a change log) says exists.

``sources.base.Source`` is the interface the freshness monitor and the nightly
reindex share: ``list_documents()`` streams one ``SourceEntry`` per document
(id, version, changed_at, and a tombstone flag where the source keeps
deletions), ``get_document(id)`` returns one ``SourceDocument`` with its
content. Implementations:

- ``sources.cms.CmsApiSource``: a generic HTTP JSON CMS API (paginated listing);
- ``sources.folder.MarkdownFolderSource``: a folder of Markdown (and HTML) files;
- ``sources.changelog.ChangeLogSource``: a change log in the corpus format.

``sources.config.SourceConfig`` / ``open_source()`` build one from settings.

Sources only list and read: the folder watcher, which publishes events for a
folder, is an ingress of its own beside the webhook (``watcher/``).
"""

from sources.base import Source, SourceDocument, SourceEntry
from sources.errors import (
    DocumentNotFoundError,
    SourceDataError,
    SourceError,
    SourceUnavailableError,
)

__all__ = [
    "DocumentNotFoundError",
    "Source",
    "SourceDataError",
    "SourceDocument",
    "SourceEntry",
    "SourceError",
    "SourceUnavailableError",
]
