"""Kubernetes at the edge: node sources (a snapshot file, the live caches), watchers, binding."""
