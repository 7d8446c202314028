"""consumers package."""
