"""Usage over time: every minute, usage per queue and resource is sampled into compact rows;
15-minute averages are kept longer; the queue page, the dashboard and the API read series of
them (``services.series``, the one door of this app)."""
