"""Operating the product: Prometheus metrics, readiness, and logs with their context (issue 16).

One door each: ``metrics`` (what services call to count), ``collectors`` (what ``/metrics``
answers), ``health`` (what ``/readyz`` checks), ``logging`` and ``middleware`` (the context of
each log line). Other apps call ``metrics`` and ``logging`` in one line and import nothing else
from here; this app reads theirs.
"""
