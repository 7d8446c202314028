"""deleter package."""
