"""webhooks package."""
