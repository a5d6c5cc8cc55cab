"""Glossary page: the laws, fences, reason codes, outcomes and policies behind every plan."""
