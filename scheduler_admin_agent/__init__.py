"""The cluster agent: connects Scheduler Admin to a real Kubernetes + YuniKorn cluster.

A small process next to the cluster that talks to the product only through its REST API (an
operator token) and to Kubernetes only through the official ``kubernetes`` client. It imports
nothing of Django, so it runs from the product's image or from a plain virtualenv with the
``kubernetes`` and ``requests`` packages.

- **State in** (``sync``): nodes, pods and disruption budgets are listed, then watched from the
  list's ``resourceVersion``; what changed is pushed to ``partitions/{p}/cluster-state`` at most
  once per ``--interval`` (``translate`` turns Kubernetes objects into the product's vocabulary).
- **Evictions out** (``evictions``): pending eviction orders are carried out with the Eviction API
  (PodDisruptionBudgets honoured) and acknowledged in bulk; refusals are reported on the order.
- **Config out** (``publish``): saved revisions are written into YuniKorn's ConfigMap (opt-in).
- **Heartbeats** tell the product who is connected, how fresh its view is and which revision the
  cluster runs.
"""

__version__ = "0.1.0"
