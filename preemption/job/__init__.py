"""Job-level (gang) preemption (SPEC 4.5): a job's asks are placed all or nothing, and tasks are
preempted for it only if that lets every ask land.

By step: ``plan`` (``plan_job``: the steps, and the judgement calls where SPEC 4.5 is silent),
``candidates`` (the job and the tasks that may make room for it), ``placement`` (the first fit),
``replay`` (the reprieve's fast re-placement) and ``admission`` (whether the queue admits the
job). The names callers use are re-exported here.
"""

from preemption.job.admission import JobUsage, admits
from preemption.job.candidates import reprieve_order_key
from preemption.job.placement import first_fit, placement_order
from preemption.job.plan import plan_job

__all__ = ["JobUsage", "admits", "first_fit", "placement_order", "plan_job", "reprieve_order_key"]
