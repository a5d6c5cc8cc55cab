"""A stand-in for a Kubernetes API server, for tests of the cluster agent (issue 15).

- ``fixtures``: builders of Nodes, Pods, PodDisruptionBudgets and ConfigMaps shaped like
  ``kubectl get <kind> <name> -o json`` output, and ``cluster(...)``, a deterministic realistic
  cluster mixing every shape the agent must understand.
- ``server``: ``FakeKubeAPI``, a local HTTP server speaking the API's wire format (lists with
  ``resourceVersion``, chunked watches, the eviction subresource, ConfigMap optimistic
  concurrency) well enough for the official ``kubernetes`` client to work against it unchanged.
- ``typed``: deserialise raw objects into the client's typed models and check the round trip.
- ``state`` (storage and REST rules), ``resources`` (kinds, Status errors), ``selectors`` and
  ``patches``: the parts ``server`` is made of.

No real API server can run on the test machines (no container runtime, no downloads); each module
docstring says which parts of the real behaviour are reproduced and which are not.
"""
