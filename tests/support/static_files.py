"""WhiteNoise for the test settings: the static files found once per process, not per client.

Outside production WhiteNoise serves straight from the staticfiles finders, and builds its table
of files (a stat and a header set for each of some 200 files) when the middleware is created.
A server process creates it once. Django's test client creates the whole middleware chain again
for every ``Client()``/``APIClient()``, so the suite rebuilt that table thousands of times: about
0.15 s of CPU each, a sixth of a sign-in request in tests. Static files do not change while the
suite runs, so the table is built by the first middleware of a process and shared by the rest.
"""

from __future__ import annotations

from typing import Any, ClassVar

from whitenoise.middleware import WhiteNoiseMiddleware


class FindersOnceWhiteNoiseMiddleware(WhiteNoiseMiddleware):
    """``WhiteNoiseMiddleware`` whose files from the finders are read once per process."""

    _from_finders: ClassVar[dict[str, Any] | None] = None

    def add_files_from_finders(self) -> None:
        cls = type(self)
        if cls._from_finders is None:
            before = set(self.files)
            super().add_files_from_finders()
            cls._from_finders = {url: self.files[url] for url in set(self.files) - before}
        else:
            self.files.update(cls._from_finders)
