"""Bot SDKs and example bots for the arena."""
