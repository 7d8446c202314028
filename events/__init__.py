"""The change event shared by every transport (see ``events.model``)."""

from events.model import Action, ChangeEvent, ContentType, EventMetadata

__all__ = ["Action", "ChangeEvent", "ContentType", "EventMetadata"]
