"""deploy/kubernetes/ held to the Kubernetes API and to least privilege, without a cluster.

No machine that runs the suite has a container runtime or a Kubernetes API server, so the
manifests are checked where they can be:

- every document of every file is validated against the Kubernetes JSON schemas that the pinned
  ``kubernetes-validate`` ships inside its wheel (offline), in strict mode, so an unknown or
  misspelt field fails as ``kubectl apply --validate=strict`` would refuse it, for every
  Kubernetes version in ``KUBERNETES_VERSIONS``;
- the agent's service account may do exactly what ``EXPECTED_PERMISSIONS`` lists: widening a
  rule (a verb, a resource, a namespace, a wildcard, a dropped ``resourceNames``) fails;
- the Deployment runs one agent at a time, with the console script, the token from the Secret's
  file and the image of docker-compose.yml, locked down as the restricted Pod Security Standard
  asks; the kustomization applies every file but the Secret template.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import all_versions

from scheduler_admin_agent.memory import needed_bytes
from scheduler_admin_agent.quantities import parse_quantity
from tests.support.compose import load_compose, service
from tests.support.processes import PROJECT_DIR

KUBERNETES_DIR = PROJECT_DIR / "deploy" / "kubernetes"
KUSTOMIZATION = "kustomization.yaml"
SECRET_TEMPLATE = "token-secret.template.yaml"
DOCKERFILE = PROJECT_DIR / "Dockerfile"
ENV_EXAMPLE = PROJECT_DIR / ".env.example"

#: The Kubernetes versions the manifests must be valid for: 1.31 up to the newest whose schemas
#: kubernetes-validate 1.37.0 ships. A version the package lacked would silently be checked
#: against an older schema, so the test also asserts each one is shipped.
KUBERNETES_VERSIONS = ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37")

NAMESPACE = "scheduler-admin"
AGENT = "scheduler-admin-agent"
YUNIKORN_NAMESPACE = "yunikorn"
YUNIKORN_CONFIGMAP = "yunikorn-configs"
TOKEN_SECRET = "scheduler-admin-agent-token"
CONSOLE_SCRIPT = "scheduler-admin-agent"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding"}

#: Every object the directory defines: (kind, namespace, name).
EXPECTED_OBJECTS = {
    ("Namespace", None, NAMESPACE),
    ("ServiceAccount", NAMESPACE, AGENT),
    ("ClusterRole", None, AGENT),
    ("ClusterRoleBinding", None, AGENT),
    ("Role", YUNIKORN_NAMESPACE, "scheduler-admin-agent-yunikorn-configs"),
    ("RoleBinding", YUNIKORN_NAMESPACE, "scheduler-admin-agent-yunikorn-configs"),
    ("ConfigMap", NAMESPACE, AGENT),
    ("Secret", NAMESPACE, TOKEN_SECRET),
    ("Deployment", NAMESPACE, AGENT),
}

#: One permission: (namespace, or None for every namespace; API group; resource; resource
#: name, or None for any; verb).
Permission = tuple[str | None, str, str, str | None, str]


def grants(
    namespace: str | None,
    group: str,
    resource: str,
    verbs: Iterable[str],
    name: str | None = None,
) -> set[Permission]:
    return {(namespace, group, resource, name, verb) for verb in verbs}


#: Everything the agent's service account may do by default, and nothing more (least
#: privilege): list and watch nodes, pods, disruption budgets, namespaces and PriorityClasses;
#: read a pod again before evicting it; evict through the Eviction API (no delete); read the one
#: ConfigMap YuniKorn reads (the revision it runs), and no other. Labelling pods (soft eviction)
#: and replacing the ConfigMap (publishing) are opt-in overlays.
EXPECTED_PERMISSIONS = (
    grants(None, "", "nodes", ["list", "watch"])
    | grants(None, "", "pods", ["get", "list", "watch"])
    | grants(None, "", "pods/eviction", ["create"])
    | grants(None, "policy", "poddisruptionbudgets", ["list", "watch"])
    | grants(None, "", "namespaces", ["list", "watch"])
    | grants(None, "scheduling.k8s.io", "priorityclasses", ["list", "watch"])
    | grants(YUNIKORN_NAMESPACE, "", "configmaps", ["get"], YUNIKORN_CONFIGMAP)
)
#: What each opt-in overlay adds (deploy/kubernetes/<overlay>/), and the option it turns on.
OVERLAY_PERMISSIONS = {
    "publish-config": grants(YUNIKORN_NAMESPACE, "", "configmaps", ["update"], YUNIKORN_CONFIGMAP),
    "soft-eviction": grants(None, "", "pods", ["patch"]),
}


@dataclass(frozen=True)
class Manifest:
    """One document of one file under deploy/kubernetes/."""

    file: str
    document: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.document["kind"]

    @property
    def name(self) -> str:
        return self.document["metadata"]["name"]

    @property
    def namespace(self) -> str | None:
        return self.document["metadata"].get("namespace")


def manifest_files() -> list[Path]:
    return sorted(path for path in KUBERNETES_DIR.glob("*.yaml") if path.name != KUSTOMIZATION)


def load_manifests() -> list[Manifest]:
    manifests = []
    for path in manifest_files():
        with path.open() as handle:
            manifests.extend(
                Manifest(path.name, document) for document in yaml.safe_load_all(handle) if document
            )
    return manifests


@pytest.fixture(scope="module")
def manifests() -> list[Manifest]:
    return load_manifests()


def the(manifests: list[Manifest], kind: str, name: str | None = None) -> dict[str, Any]:
    """The one document of ``kind`` (and ``name``)."""
    found = [m.document for m in manifests if m.kind == kind and name in (None, m.name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def agent_container(manifests: list[Manifest]) -> dict[str, Any]:
    containers = the(manifests, "Deployment", AGENT)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def dockerfile_user_ids() -> tuple[int, int]:
    """The uid and gid of the image's user (``useradd --uid``, ``groupadd --gid``)."""
    text = DOCKERFILE.read_text()
    uid = re.search(r"useradd\b.*--uid (\d+)", text)
    gid = re.search(r"groupadd\b.*--gid (\d+)", text)
    assert uid and gid, "the Dockerfile creates no user with a fixed uid and gid"
    return int(uid.group(1)), int(gid.group(1))


# --- The Kubernetes API ---------------------------------------------------------------------------


def test_the_directory_defines_the_agents_objects_one_per_file(manifests: list[Manifest]) -> None:
    found = {(m.kind, m.namespace, m.name) for m in manifests}
    assert found == EXPECTED_OBJECTS
    files = [m.file for m in manifests]
    assert len(files) == len(set(files)), "one object per file"
    for manifest in manifests:
        if manifest.kind in CLUSTER_SCOPED:
            assert manifest.namespace is None, f"{manifest.file}: cluster-scoped, no namespace"
        else:
            # Explicit, so `kubectl apply -f` never puts it in whatever namespace is current.
            assert manifest.namespace, f"{manifest.file}: a namespaced object needs a namespace"


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_document_is_valid_for_kubernetes(manifests: list[Manifest], version: str) -> None:
    """Strict schema validation of every document, naming each failure with its field path."""
    assert manifests
    errors = []
    for manifest in manifests:
        try:
            validated = kubernetes_validate.validate(manifest.document, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(part) for part in error.path)
            errors.append(
                f"{manifest.file}: {manifest.kind}/{manifest.name}: {path}: {error.message}"
            )
        except kubernetes_validate.SchemaNotFoundError as error:
            errors.append(f"{manifest.file}: {error.message}")
        else:
            assert validated == version, f"kubernetes-validate has no schema for {version}"
    assert errors == [], "\n".join(errors)


def test_strict_validation_refuses_a_misspelt_field(manifests: list[Manifest]) -> None:
    """The check above can fail: the strict schemas refuse an unknown field deep in a pod
    spec, and a wrong type, and they come from the package itself (no network)."""
    assert set(KUBERNETES_VERSIONS) <= {version.rsplit(".", 1)[0] for version in all_versions()}
    deployment = the(manifests, "Deployment", AGENT)
    misspelt = yaml.safe_load(yaml.safe_dump(deployment))
    misspelt["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsNonRot"] = True
    with pytest.raises(kubernetes_validate.ValidationError, match="runAsNonRot"):
        kubernetes_validate.validate(misspelt, KUBERNETES_VERSIONS[-1], strict=True)
    wrong_type = yaml.safe_load(yaml.safe_dump(deployment))
    wrong_type["spec"]["replicas"] = "one"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(wrong_type, KUBERNETES_VERSIONS[0], strict=True)


def test_the_kustomization_applies_every_manifest_but_the_secret_template() -> None:
    with (KUBERNETES_DIR / KUSTOMIZATION).open() as handle:
        kustomization = yaml.safe_load(handle)
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    # A `namespace:` would move the Role and RoleBinding out of the yunikorn namespace, and
    # anything else (generators, patches) would change what the other tests read.
    assert set(kustomization) == {"apiVersion", "kind", "resources"}
    resources = kustomization["resources"]
    assert len(resources) == len(set(resources))
    expected = {path.name for path in manifest_files()} - {SECRET_TEMPLATE}
    assert set(resources) == expected


# --- Least privilege ------------------------------------------------------------------------------


def permissions_of(role: dict[str, Any]) -> set[Permission]:
    """Every (namespace, group, resource, name, verb) a Role or ClusterRole grants."""
    assert "aggregationRule" not in role, "an aggregated ClusterRole grows with other roles"
    namespace = role["metadata"].get("namespace") if role["kind"] == "Role" else None
    found: set[Permission] = set()
    for rule in role["rules"]:
        assert "nonResourceURLs" not in rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in rule.get("resourceNames") or [None]:
                        found.add((namespace, group, resource, name, verb))
    return found


def granted_permissions(manifests: list[Manifest]) -> set[Permission]:
    """What the agent's service account may do through every binding in ``manifests``."""
    roles = {
        (m.kind, m.namespace if m.kind == "Role" else None, m.name): m.document
        for m in manifests
        if m.kind in {"Role", "ClusterRole"}
    }
    granted: set[Permission] = set()
    bound = []
    for manifest in manifests:
        if manifest.kind not in {"RoleBinding", "ClusterRoleBinding"}:
            continue
        binding = manifest.document
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": AGENT, "namespace": NAMESPACE}
        ], f"{manifest.file} must bind the agent's service account and no one else"
        reference = binding["roleRef"]
        assert reference["apiGroup"] == "rbac.authorization.k8s.io"
        # A RoleBinding grants a role within its own namespace only.
        scope = manifest.namespace if manifest.kind == "RoleBinding" else None
        key = (reference["kind"], scope if reference["kind"] == "Role" else None, reference["name"])
        assert key in roles, f"{manifest.file} binds {key}, which deploy/kubernetes/ lacks"
        bound.append(key)
        granted |= {
            (scope, group, resource, name, verb)
            for _, group, resource, name, verb in permissions_of(roles[key])
        }
    assert sorted(bound) == sorted(roles), "every role is bound exactly once"
    assert not any("*" in permission for permission in granted), "no wildcard"
    return granted


def test_the_agent_may_do_exactly_what_it_needs(manifests: list[Manifest]) -> None:
    """What the service account may do, through every binding that names it, equals the table:
    a wider rule anywhere (a verb, a resource, a namespace, `*`, a dropped resourceNames) or a
    role bound to it from elsewhere fails."""
    assert granted_permissions(manifests) == EXPECTED_PERMISSIONS


@pytest.mark.parametrize("overlay", sorted(OVERLAY_PERMISSIONS))
def test_each_opt_in_overlay_adds_exactly_what_its_option_needs(
    manifests: list[Manifest], overlay: str
) -> None:
    """``kubectl apply -k deploy/kubernetes/<overlay>``: the default install plus the roles of the
    option, nothing else; publish-config also turns publishing on."""
    directory = KUBERNETES_DIR / overlay
    with (directory / KUSTOMIZATION).open() as handle:
        kustomization = yaml.safe_load(handle)
    files = sorted(path.name for path in directory.glob("*.yaml") if path.name != KUSTOMIZATION)
    assert kustomization["resources"] == ["..", *files]
    added = [
        Manifest(f"{overlay}/{name}", document)
        for name in files
        for document in yaml.safe_load_all((directory / name).read_text())
        if document
    ]
    for manifest in added:
        kubernetes_validate.validate(manifest.document, KUBERNETES_VERSIONS[-1], strict=True)
    granted = granted_permissions([*manifests, *added])
    assert granted - EXPECTED_PERMISSIONS == OVERLAY_PERMISSIONS[overlay]
    patches = kustomization.get("patches", [])
    if overlay == "publish-config":
        assert the(manifests, "ConfigMap", AGENT)["data"]["AGENT_PUBLISH_CONFIG"] == "false"
        [patch] = patches
        assert patch["target"] == {"kind": "ConfigMap", "name": AGENT}
        assert yaml.safe_load(patch["patch"]) == [
            {"op": "replace", "path": "/data/AGENT_PUBLISH_CONFIG", "value": "true"}
        ]
    else:
        assert patches == []


def test_the_configmap_the_agent_publishes_to_is_the_one_the_role_names(
    manifests: list[Manifest],
) -> None:
    options = the(manifests, "ConfigMap", AGENT)["data"]
    role = the(manifests, "Role")
    assert options["AGENT_CONFIGMAP_NAMESPACE"] == role["metadata"]["namespace"]
    assert [options["AGENT_CONFIGMAP_NAME"]] == role["rules"][0]["resourceNames"]
    assert options["AGENT_CONFIGMAP_KEY"] == "queues.yaml"
    # Read-only until the admin turns publishing on.
    assert options["AGENT_PUBLISH_CONFIG"] == "false"


# --- The Deployment -------------------------------------------------------------------------------


def test_one_agent_runs_at_a_time(manifests: list[Manifest]) -> None:
    """Recreate stops the old pod before the new one starts; a rolling update would run two
    agents on one partition for a while."""
    spec = the(manifests, "Deployment", AGENT)["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"] == {"matchLabels": {"app.kubernetes.io/name": AGENT}}
    assert labels["app.kubernetes.io/name"] == AGENT


def test_the_agent_runs_the_console_script_with_the_token_from_the_secret_file(
    manifests: list[Manifest],
) -> None:
    pod = the(manifests, "Deployment", AGENT)["spec"]["template"]["spec"]
    container = agent_container(manifests)
    assert container["command"] == [CONSOLE_SCRIPT]
    assert "args" not in container, "options come from the environment (configmap.yaml)"
    assert pod["serviceAccountName"] == the(manifests, "ServiceAccount")["metadata"]["name"]
    assert pod["automountServiceAccountToken"] is True  # the in-cluster config needs it

    env = {entry["name"]: entry for entry in container["env"]}
    token_file = PurePosixPath(env["AGENT_TOKEN_FILE"]["value"])
    mounts = {mount["name"]: mount for mount in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    [token_volume] = [name for name, volume in volumes.items() if "secret" in volume]
    assert mounts[token_volume]["mountPath"] == str(token_file.parent)
    assert mounts[token_volume]["readOnly"] is True
    secret_volume = volumes[token_volume]["secret"]
    assert secret_volume["secretName"] == TOKEN_SECRET
    assert secret_volume["items"] == [{"key": "token", "path": token_file.name}]
    assert secret_volume["defaultMode"] == 0o440

    # The template defines that key, with a placeholder that could never work.
    template = the(manifests, "Secret", TOKEN_SECRET)
    assert set(template["stringData"]) == {"token"}
    assert "change-me" in template["stringData"]["token"]
    assert "data" not in template

    # The token never travels in the environment.
    options = the(manifests, "ConfigMap", AGENT)
    assert container["envFrom"] == [{"configMapRef": {"name": options["metadata"]["name"]}}]
    assert not {"AGENT_TOKEN", "AGENT_TOKEN_FILE"} & set(options["data"])
    assert "AGENT_TOKEN" not in env
    assert all(name.startswith("AGENT_") for name in options["data"])


def test_the_agent_runs_the_image_of_docker_compose(manifests: list[Manifest]) -> None:
    compose = load_compose()
    container = agent_container(manifests)
    assert container["image"] == service(compose, "web")["image"]
    assert container["image"] == service(compose, "agent")["image"]
    # :latest defaults to Always, and a kind node cannot pull an image built locally.
    assert container["imagePullPolicy"] == "IfNotPresent"


def test_the_pod_is_locked_down(manifests: list[Manifest]) -> None:
    """Non-root as the image's own user, read-only root filesystem, no privilege escalation, no
    capabilities, seccomp RuntimeDefault, no host namespaces or paths: the restricted Pod
    Security Standard, which the namespace enforces."""
    uid, gid = dockerfile_user_ids()
    pod = the(manifests, "Deployment", AGENT)["spec"]["template"]["spec"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": uid,
        "runAsGroup": gid,
        "fsGroup": gid,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert not {"hostNetwork", "hostPID", "hostIPC"} & set(pod)
    assert {kind for volume in pod["volumes"] for kind in volume} - {"name"} <= {
        "secret",
        "emptyDir",
    }
    container = agent_container(manifests)
    assert container["securityContext"] == {
        "runAsNonRoot": True,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    resources = container["resources"]
    assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}
    namespace = the(manifests, "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_agents_memory_limit_holds_a_cluster_of_kubernetes_documented_size(
    manifests: list[Manifest],
) -> None:
    """The Deployment's limit is at least what the agent itself asks for 5,000 nodes and
    150,000 pods (``memory.needed_bytes``, from the benchmark), so it starts there."""
    resources = agent_container(manifests)["resources"]
    limit = parse_quantity(resources["limits"]["memory"])
    assert limit >= needed_bytes(5000, 150_000)
    assert parse_quantity(resources["requests"]["memory"]) <= limit


def test_the_agent_is_probed_on_its_own_health_and_never_preempted(
    manifests: list[Manifest],
) -> None:
    """Liveness asks the agent's /healthz (its loop turns), readiness its /readyz (cluster
    listed, product answering), on the port it is told to listen on. And the agent's own pod, a
    YuniKorn task under the admission controller, must never be one of its victims."""
    container = agent_container(manifests)
    assert "startupProbe" not in container
    [port] = container["ports"]
    assert port == {"name": "health", "containerPort": 8081, "protocol": "TCP"}
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    listen = the(manifests, "ConfigMap", AGENT)["data"]["AGENT_HEALTH_LISTEN"]
    assert listen.rpartition(":")[2] == str(port["containerPort"])
    template = the(manifests, "Deployment", AGENT)["spec"]["template"]
    assert template["metadata"]["annotations"]["yunikorn.apache.org/allow-preemption"] == "false"


# --- The agent's options --------------------------------------------------------------------------

#: A value for each variable the agent is given, unlike the defaults and the base environment
#: below, so that a variable the agent does not read shows (AGENT_TOKEN_FILE gets a file).
SAMPLE_VALUES = {
    "AGENT_API": "http://sample.invalid:8000",
    "AGENT_TOKEN": "sample-token",
    "AGENT_PARTITION": "sample-partition",
    "AGENT_KUBECONFIG": "/sample/kubeconfig",
    "AGENT_CONTEXT": "sample-context",
    "AGENT_CLUSTER_NAME": "sample-cluster",
    "AGENT_NAME": "sample-agent",
    "AGENT_INTERVAL": "7",
    "AGENT_SCHEDULER_NAME": "sample-scheduler",
    "AGENT_UNIQUE_APP_IDS": "true",
    "AGENT_PUBLISH_CONFIG": "true",
    "AGENT_CONFIGMAP_NAMESPACE": "sample-namespace",
    "AGENT_CONFIGMAP_NAME": "sample-configmap",
    "AGENT_CONFIGMAP_KEY": "sample.yaml",
    "AGENT_LOG_LEVEL": "DEBUG",
    "AGENT_HEALTH_LISTEN": "127.0.0.1:18081",
}
#: What the agent cannot start without; a blank one is an error, not a default.
REQUIRED = {"AGENT_API": "http://base.invalid", "AGENT_PARTITION": "base", "AGENT_TOKEN": "base"}


def variables_set_for_the_agent(manifests: list[Manifest]) -> set[str]:
    """Every AGENT_* variable that deploy/kubernetes/, docker-compose.yml and .env.example set."""
    names = set(the(manifests, "ConfigMap", AGENT)["data"])
    names |= {entry["name"] for entry in agent_container(manifests)["env"]}
    names |= set(service(load_compose(), "agent")["environment"])
    names |= set(re.findall(r"^(AGENT_[A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), re.MULTILINE))
    return names


@pytest.mark.skipif(
    importlib.util.find_spec("scheduler_admin_agent") is None,
    reason="the agent package (scheduler_admin_agent) is not in this checkout",
)
def test_the_agent_reads_every_variable_it_is_given(
    manifests: list[Manifest], tmp_path: Path
) -> None:
    """Each variable set for the agent changes its options, and a blank one (what compose passes
    for a variable missing from .env) means the default: a misnamed variable would otherwise be
    ignored without a word. Read through the agent's own option parser."""
    from scheduler_admin_agent.options import parse_options

    names = variables_set_for_the_agent(manifests)
    assert {"AGENT_API", "AGENT_PARTITION", "AGENT_TOKEN_FILE"} <= names
    token_file = tmp_path / "token"
    token_file.write_text("token-from-the-file\n")
    samples = {**SAMPLE_VALUES, "AGENT_TOKEN_FILE": str(token_file)}
    assert sorted(names - set(samples)) == [], "give each new variable a sample value above"

    base = parse_options([], environ=REQUIRED)
    ignored = [
        name
        for name in sorted(names)
        if parse_options([], {**REQUIRED, name: samples[name]}) == base
    ]
    assert ignored == [], "the agent ignores these variables"
    blank_is_not_default = [
        name
        for name in sorted(names - set(REQUIRED))
        if parse_options([], {**REQUIRED, name: ""}) != base
    ]
    assert blank_is_not_default == []
