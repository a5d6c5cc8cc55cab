"""Fences page: the hierarchy with every fence drawn as a boundary."""
