"""Cluster objects as a Kubernetes API server sends them, for the agent's benchmark
(``scheduler_admin_agent.bench``): pods and nodes with everything a real one carries
(``managedFields`` of the controller, the scheduler and the kubelet, the service-account volume,
environment, probes, container statuses, a node's image list), so that decoding and memory are
measured on bodies of a real size: about 5.9 KB a pod, 14 KB a node.

Deterministic: object ``i`` is the same on every run. Pods are spread over nodes, namespaces
(one application per ReplicaSet, 20 pods each), and the benchmark's queues; 90% are ours
(``schedulerName: yunikorn``) and bound, 5% ours and pending, 5% another scheduler's.
"""

from __future__ import annotations

import json
from typing import Any

NAMESPACES = 200
QUEUES = [f"root.tenant-{t}.team-{q}" for t in range(10) for q in range(5)]
CREATED = "2026-11-01T08:00:00Z"


def _uid(kind: str, index: int) -> str:
    text = f"{index:012x}"
    return f"{kind[:8]:0<8}-4a1b-4c2d-8e3f-{text}"


def placement_config() -> dict[str, Any]:
    """The partition config the agent reads (``ProductClient.placement_config``): the
    ``provided`` rule and ``QUEUES`` (submit open to all)."""
    queues = [{"path": "root", "parent": None, "extra": {"submitacl": "*"}}]
    for tenant in range(10):
        queues.append({"path": f"root.tenant-{tenant}", "parent": "root", "extra": {}})
        for team in range(5):
            queues.append(
                {"path": f"root.tenant-{tenant}.team-{team}", "parent": f"root.tenant-{tenant}",
                 "extra": {}}
            )  # fmt: skip
    return {"partition": {"extra": {"placementrules": [{"name": "provided"}]}}, "queues": queues}


def _managed(
    manager: str, operation: str, time: str, fields: dict[str, Any], sub: str = ""
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if sub:
        entry["subresource"] = sub
    return entry


_POD_SPEC_FIELDS = {
    "f:metadata": {
        "f:generateName": {},
        "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:queue": {},
                     "f:applicationId": {}},
        "f:ownerReferences": {".": {}, 'k:{"uid":"00000000"}': {}},
    },
    "f:spec": {
        "f:containers": {
            'k:{"name":"app"}': {
                ".": {}, "f:env": {".": {}, 'k:{"name":"LOG_LEVEL"}': {".": {}, "f:name": {},
                                                                      "f:value": {}}},
                "f:image": {}, "f:imagePullPolicy": {}, "f:livenessProbe": {}, "f:name": {},
                "f:ports": {}, "f:readinessProbe": {}, "f:resources": {".": {}, "f:limits": {},
                                                                     "f:requests": {}},
                "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
                "f:volumeMounts": {},
            }
        },
        "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
        "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
    },
}  # fmt: skip
_POD_STATUS_FIELDS = {
    "f:status": {
        "f:conditions": {
            f'k:{{"type":"{kind}"}}': {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {},
                                      "f:status": {}, "f:type": {}}
            for kind in ("ContainersReady", "Initialized", "PodReadyToStartContainers", "Ready")
        },
        "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {},
        "f:podIP": {}, "f:podIPs": {".": {}, 'k:{"ip":"10.0.0.1"}': {".": {}, "f:ip": {}}},
        "f:startTime": {},
    }
}  # fmt: skip


def node_name(index: int) -> str:
    return f"node-{index:05d}"


def pod(index: int, nodes: int, *, version: int = 1) -> dict[str, Any]:
    """Pod ``index`` of a cluster of ``nodes`` nodes, at ``version`` (a later version has
    restarted its container once more: what a watch's MODIFIED event carries)."""
    namespace = f"team-{index % NAMESPACES:03d}"
    replica_set = f"svc-{index // 20:06d}-7d9f8c6b5"
    name = f"{replica_set}-{index:05x}"
    ours = index % 20 != 19
    bound = index % 20 < 18 or not ours
    node = node_name((index * 7919) % nodes) if bound else ""
    queue = QUEUES[(index // 20) % len(QUEUES)]
    cpu = ("250m", "500m", "1", "2")[index % 4]
    memory = ("512Mi", "1Gi", "2Gi", "4Gi")[(index // 4) % 4]
    labels = {"app": f"svc-{index // 20:06d}", "pod-template-hash": "7d9f8c6b5"}
    if ours:
        labels |= {"queue": queue, "applicationId": f"{namespace}-svc-{index // 20:06d}"}
    started = "2026-11-01T08:00:05Z"
    spec: dict[str, Any] = {
        "volumes": [{"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
        "containers": [{
            "name": "app",
            "image": f"registry.example.com/{namespace}/svc:{index % 97}.4.2",
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                      {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
            "env": [{"name": "LOG_LEVEL", "value": "info"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                    "fieldPath": "metadata.name"}}},
                    {"name": "JAVA_OPTS", "value": "-XX:MaxRAMPercentage=75 -XX:+UseG1GC"},
                    {"name": "UPSTREAM_URL", "value": f"http://api.{namespace}.svc:8080/v1"}],
            "resources": {"limits": {"cpu": cpu, "memory": memory},
                          "requests": {"cpu": cpu, "memory": memory}},
            "volumeMounts": [{"name": "kube-api-access-x7k2p", "readOnly": True,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                              "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                              "failureThreshold": 3},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
                               "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1,
                               "failureThreshold": 3},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        }],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "schedulerName": "yunikorn" if ours else "default-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
             "effect": "NoExecute", "tolerationSeconds": 300}],
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }  # fmt: skip
    if node:
        spec["nodeName"] = node
    conditions = [
        {"type": kind, "status": "True" if bound else "False", "lastProbeTime": None,
         "lastTransitionTime": started}
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                     "PodScheduled")
    ]  # fmt: skip
    status: dict[str, Any] = {"phase": "Running" if bound else "Pending", "conditions": conditions,
                              "qosClass": "Guaranteed"}  # fmt: skip
    if bound:
        ip = f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}"
        status |= {
            "hostIP": "192.168.1.10", "hostIPs": [{"ip": "192.168.1.10"}],
            "podIP": ip, "podIPs": [{"ip": ip}], "startTime": started,
            "containerStatuses": [{
                "name": "app", "state": {"running": {"startedAt": started}},
                "lastState": {}, "ready": True, "restartCount": version - 1,
                "image": spec["containers"][0]["image"],
                "imageID": "registry.example.com/svc@sha256:" + f"{index:064x}",
                "containerID": "containerd://" + f"{index * 31:064x}", "started": True,
                "allocatedResources": {"cpu": cpu, "memory": memory},
                "resources": {"limits": {"cpu": cpu, "memory": memory},
                              "requests": {"cpu": cpu, "memory": memory}},
            }],
        }  # fmt: skip
    managed = [
        _managed("kube-controller-manager", "Update", CREATED, _POD_SPEC_FIELDS),
        _managed("kubelet", "Update", started, _POD_STATUS_FIELDS, "status"),
    ]
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name, "generateName": f"{replica_set}-", "namespace": namespace,
            "uid": _uid("pod", index), "resourceVersion": str(1_000_000 + index * 10 + version),
            "creationTimestamp": CREATED, "labels": labels,
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-10-30T12:00:00Z",
                            "prometheus.io/scrape": "true", "prometheus.io/port": "9090",
                            "prometheus.io/path": "/metrics",
                            "cluster-autoscaler.kubernetes.io/safe-to-evict": "true",
                            "checksum/config": f"{index % 7:064x}"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": replica_set, "uid": _uid("rs", index // 20),
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": managed,
        },
        "spec": spec,
        "status": status,
    }  # fmt: skip


def node(index: int) -> dict[str, Any]:
    name = node_name(index)
    images = [
        {"names": [f"registry.example.com/team-{i:03d}/svc@sha256:{index * 1000 + i:064x}",
                   f"registry.example.com/team-{i:03d}/svc:{i}.4.2"], "sizeBytes": 73_000_000 + i}
        for i in range(60)
    ]  # fmt: skip
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name, "uid": _uid("node", index), "resourceVersion": str(500_000 + index),
            "creationTimestamp": CREATED,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64",
                       "node.kubernetes.io/instance-type": "m6i.4xlarge",
                       "topology.kubernetes.io/zone": f"zone-{index % 3}"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"},
            "managedFields": [
                _managed("kubelet", "Update", CREATED, {"f:metadata": {"f:labels": {}}}),
                _managed("kubelet", "Update", CREATED, {"f:status": {"f:conditions": {},
                                                                     "f:images": {}}}, "status"),
            ],
        },
        "spec": {"podCIDR": f"10.{index // 256}.{index % 256}.0/24", "providerID": f"aws:///{name}"},
        "status": {
            "capacity": {"cpu": "16", "memory": "65023868Ki", "pods": "110",
                         "ephemeral-storage": "104845292Ki"},
            "allocatable": {"cpu": "15890m", "memory": "63873660Ki", "pods": "110",
                            "ephemeral-storage": "96625420948"},
            "conditions": [
                {"type": kind, "status": "True" if kind == "Ready" else "False",
                 "lastHeartbeatTime": CREATED, "lastTransitionTime": CREATED, "reason": kind,
                 "message": f"kubelet reports {kind}"}
                for kind in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [{"type": "InternalIP", "address": "192.168.1.10"},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": f"{index:032x}", "systemUUID": _uid("sys", index),
                         "bootID": _uid("boot", index), "kernelVersion": "6.1.0",
                         "osImage": "Debian GNU/Linux 12", "containerRuntimeVersion": "containerd://1.7.20",
                         "kubeletVersion": "v1.31.2", "kubeProxyVersion": "v1.31.2",
                         "operatingSystem": "linux", "architecture": "amd64"},
            "images": images,
        },
    }  # fmt: skip


def list_page(items: list[dict[str, Any]], kind: str, version: str, more: bool) -> bytes:
    """One page of a list, as the API server encodes it."""
    meta: dict[str, Any] = {"resourceVersion": version}
    if more:
        meta["continue"] = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MX0"
    body = {"kind": f"{kind}List", "apiVersion": "v1", "metadata": meta, "items": items}
    return json.dumps(body, separators=(",", ":")).encode()


def watch_line(event: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": event, "object": obj}, separators=(",", ":")).encode()
