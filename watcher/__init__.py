"""The folder watcher: an ingress beside the webhook, publishing change events for a folder.

``watcher.watch`` watches a library folder and publishes a change event for each
creation, edit, rename and deletion, as the CMS's webhook does for the CMS;
``watcher.folder_sync`` holds the comparison and the version rule,
``watcher.watch_state`` what was published. It reads the folder through
``sources.folder`` (which only lists and reads: ``sources/`` never publishes).
"""
