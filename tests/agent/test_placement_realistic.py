"""Twenty pods of a realistic cluster, charged where YuniKorn charges them.

The partition's ``queues.yaml`` is read by the product's own parser (``load_scheduler_config``,
the config the agent then gets from the product), with YuniKorn's usual rule chain: the queue a
pod names; a personal queue for developers; a queue per namespace under the parent the
namespace's annotation names; a queue per namespace under ``root.tenants`` for everyone but
service accounts; ``root.default`` last. Root grants nobody (YuniKorn's advice for production);
access is granted lower down. The pods spell their queues as users spell them: ``ROOT.x``,
``batch.nightly``, a parent queue's name, a queue the user may not use, an invalid name.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from preemption.placement import Application, Placer, UserGroup
from preemption.yunikorn import load_scheduler_config
from scheduler_admin_agent.translate import Reading, translate
from tests.agent.test_translate import node, pod

QUEUES_YAML = """
partitions:
  - name: default
    placementrules:
      - name: provided
      - name: user
        create: true
        filter: {type: allow, groups: [developers]}
        parent: {name: fixed, value: users}
      - name: tag
        value: namespace
        create: true
        parent: {name: tag, value: namespace.parentqueue}
      - name: tag
        value: namespace
        create: true
        filter: {type: deny, users: ["^system:serviceaccount:"]}
        parent: {name: fixed, value: root.tenants}
    queues:
      - name: root
        queues:
          - name: default
            submitacl: "*"
          - name: batch
            submitacl: "*"
            queues: [{name: nightly}, {name: adhoc}]
          - name: prod
            submitacl: " prod-team"
            queues: [{name: web}, {name: api}]
          - name: research
            submitacl: "*"
            queues: [{name: ml}, {name: nlp}]
          - name: users
            parent: true
            submitacl: "*"
            childtemplate:
              resources: {max: {vcore: "4", memory: 8Gi}}
          - name: tenants
            parent: true
            submitacl: "*"
            childtemplate:
              resources: {guaranteed: {vcore: "2"}, max: {vcore: "16"}}
"""


def product_config() -> dict[str, Any]:
    """The product's config JSON for ``QUEUES_YAML`` (what ``ProductClient.placement_config``
    hands the agent)."""
    [config] = load_scheduler_config(yaml.safe_load(QUEUES_YAML))
    return {
        "partition": {"extra": json.loads(json.dumps(dict(config.settings.extra)))},
        "queues": [
            {"path": queue.path, "parent": queue.parent, "extra": dict(queue.extra)}
            for queue in config.queues
        ],
    }


def user_info(user: str, *groups: str) -> dict[str, str]:
    return {"yunikorn.apache.org/user.info": json.dumps({"user": user, "groups": list(groups)})}


#: Namespaces and their annotations: ``ml`` names its parent queue.
NAMESPACES = {"ml": {"yunikorn.apache.org/parentqueue": "root.research"}, "batch": {}, "web": {}}

#: (pod, namespace, app, queue label, annotations, bound) -> where YuniKorn charges it:
#: a configured queue, ("dynamic", path) for a queue YuniKorn creates, or None (rejected).
PODS: list[tuple[str, str, str, str, dict[str, str], bool, Any]] = [
    # A full path in lower case: the queue itself.
    ("etl-1-a", "batch", "etl-1", "root.batch.nightly", user_info("bob"), True,
     "root.batch.nightly"),
    ("etl-1-b", "batch", "etl-1", "root.batch.nightly", user_info("bob"), False,
     "root.batch.nightly"),
    # "batch.nightly" does not start with root.: one queue, root.batch_dot_nightly, which does
    # not exist; bob is no developer; batch names no parent; the last tag rule creates one.
    ("etl-2-a", "batch", "etl-2", "batch.nightly", user_info("bob"), True,
     ("dynamic", "root.tenants.batch")),
    ("etl-2-b", "batch", "etl-2", "batch.nightly", user_info("bob"), True,
     ("dynamic", "root.tenants.batch")),
    # "ROOT.Batch.Adhoc" is not lower-case root.: root.ROOT_dot_Batch_dot_Adhoc does not
    # exist; alice is a developer: her personal queue is created under root.users.
    ("adhoc-a", "batch", "adhoc-1", "ROOT.Batch.Adhoc", user_info("alice", "developers"), True,
     ("dynamic", "root.users.alice")),
    ("adhoc-b", "batch", "adhoc-1", "ROOT.Batch.Adhoc", user_info("alice", "developers"), False,
     ("dynamic", "root.users.alice")),
    # A queue annotation, a user of the group prod grants.
    ("web-0", "web", "web-frontend", "root.prod.web", user_info("carol", "prod-team"), True,
     "root.prod.web"),
    ("web-1", "web", "web-frontend", "root.prod.web", user_info("carol", "prod-team"), True,
     "root.prod.web"),
    ("web-2", "web", "web-frontend", "root.prod.web", user_info("carol", "prod-team"), False,
     "root.prod.web"),
    # The same queue named by a user prod does not grant: passed over, the namespace rule wins.
    ("intruder", "web", "intruder", "root.prod.web", user_info("dave"), True,
     ("dynamic", "root.tenants.web")),
    # A parent queue named by the pod falls through to the next rules.
    ("parent-a", "batch", "parent-pick", "root.batch", user_info("bob"), True,
     ("dynamic", "root.tenants.batch")),
    ("parent-b", "batch", "parent-pick", "root.batch", user_info("bob"), False,
     ("dynamic", "root.tenants.batch")),
    # No queue named: the namespace annotation names root.research, whose leaf ml exists.
    ("train-0", "ml", "ml-train", "", user_info("erin"), True, "root.research.ml"),
    ("train-1", "ml", "ml-train", "", user_info("erin"), True, "root.research.ml"),
    ("train-2", "ml", "ml-train", "", user_info("erin"), False, "root.research.ml"),
    ("eval-0", "ml", "ml-eval", "root.research.nlp", user_info("erin"), True, "root.research.nlp"),
    # No user.info: the user is nobody; a namespace without annotation: root.tenants.<ns>.
    ("sandbox-a", "sandbox", "sandbox-1", "", {}, True, ("dynamic", "root.tenants.sandbox")),
    ("sandbox-b", "sandbox", "sandbox-1", "", {}, False, ("dynamic", "root.tenants.sandbox")),
    # A service account: the last tag rule's filter skips it; root.default takes it.
    ("runner", "ci", "ci-job", "", user_info("system:serviceaccount:ci:runner"), True,
     "root.default"),
    # An invalid name ends placement: rejected, no later rule, no root.default.
    ("typo", "batch", "typo", "root.batch.night!y", user_info("bob"), False, None),
]  # fmt: skip


def kube_pods() -> list[Any]:
    made = []
    for index, (name, namespace, app, queue, notes, bound, _) in enumerate(PODS):
        labels = {"applicationId": app}
        if queue:
            labels["queue"] = queue
        made.append(
            pod(
                name,
                namespace=namespace,
                node_name="n1" if bound else None,
                labels=labels,
                annotations=notes,
                created=f"2026-01-01T10:{index:02d}:00Z",
            )
        )
    return made


def test_twenty_pods_are_placed_where_yunikorn_places_them() -> None:
    """The placement rules alone, pod by pod's application, in the order YuniKorn saw them."""
    placer = Placer.from_config(product_config())
    seen: dict[str, Any] = {}
    for name, namespace, app, queue, notes, _, expected in PODS:
        if app not in seen:
            info = json.loads(notes.get("yunikorn.apache.org/user.info", "{}"))
            placement = placer.place(
                Application(
                    app,
                    queue,
                    UserGroup(info.get("user", "nobody"), tuple(info.get("groups", ()))),
                    {"namespace": namespace, **(
                        {"namespace.parentqueue": NAMESPACES[namespace][
                            "yunikorn.apache.org/parentqueue"]}
                        if NAMESPACES.get(namespace) else {}
                    )},
                )
            )  # fmt: skip
            queue_obj = placer.tree.get(placement.queue) if placement.queue else None
            seen[app] = (
                ("dynamic", placement.queue) if queue_obj and queue_obj.dynamic else placement.queue
            )
        assert seen[app] == expected, name
    # The dynamic leaves took their parent's child template.
    assert placer.tree.get("root.users.alice").template["resources"]["max"]["vcore"] == "4"
    assert placer.tree.get("root.tenants.batch").template["resources"]["max"]["vcore"] == "16"


def test_the_agent_charges_them_there_and_reports_the_rest() -> None:
    """The agent's translation: pods of configured queues are pushed; pods YuniKorn puts in a
    queue it creates are pushed in it, with the queue and its child template in the body's
    dynamic queues; the rejected one is left out with the reason."""
    state = translate(
        [node("n1", cpu="64", memory="256Gi")],
        kube_pods(),
        [],
        scheduler_name="yunikorn",
        reading=Reading(product_config(), NAMESPACES),
    )
    pushed = {**state.allocations, **state.asks}
    for name, namespace, _, _, _, _, expected in PODS:
        task = f"{namespace}/{name}@uid-{name}"
        if isinstance(expected, str):
            assert pushed[task]["queue"] == expected, name
            assert task not in state.skipped
        elif expected is None:
            assert task not in pushed
            assert (
                "YuniKorn does not place application typo: invalid queue name"
                in (state.skipped[task])
            )
        else:
            assert pushed[task]["queue"] == expected[1], name
            assert task not in state.skipped
    assert sorted(state.dynamic_queues) == [
        "root.tenants.batch", "root.tenants.sandbox", "root.tenants.web", "root.users.alice",
    ]  # fmt: skip
    items = state.dynamic_items()
    assert items["root.tenants.batch"] == {
        "path": "root.tenants.batch",
        "leaf": True,
        "template": {"resources": {"guaranteed": {"vcore": "2"}, "max": {"vcore": "16"}}},
    }
    assert items["root.users.alice"]["template"] == {
        "resources": {"max": {"vcore": "4", "memory": "8Gi"}}
    }
    assert len(pushed) + len(state.skipped) == 20
