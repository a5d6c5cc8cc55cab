"""Help: each console page's Help link, and the documentation site served under ``/docs/``."""
