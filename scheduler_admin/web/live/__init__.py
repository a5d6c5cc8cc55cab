"""Live updates of the console's dashboard and queue page (polled JSON; see ``views``)."""
