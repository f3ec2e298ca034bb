"""Reproductions of the papers' experiments."""
