"""Seeded graph-sequence generators: random graphs per round, B-strongly-connected sequences."""
