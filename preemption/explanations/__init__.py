"""Each policy's explanation of its candidates, one module per policy: ``quota``,
``inter_queue``, ``required_node``, ``priority`` and ``job``, each replaying its policy's walk to
say where each candidate stood and which number decided. ``preemption.explain`` is the entry
point that calls them and makes the records; ``notes``, ``wording`` and ``task_rules`` are what
the policies' explanations share.
"""
