"""The core every era shares: the call, the method table, the catalog, the tool API, metrics."""
