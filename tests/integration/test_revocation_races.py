"""Revocations and reverts racing writes sent through gunicorn, on PostgreSQL.

**Revocation takes effect inside the write.** A user's write (a queue PATCH over HTTP with
their API token) is released at the same instant as an admin's revocation of that user's
right to write: their token revoked, their role lowered to viewer, their account deactivated
(``accounts.services``, what the Users page calls), each twelve times with the revocation a
little later every time. Right after the revocation returns, the test notes which of the
user's changes are saved; at the end, nothing more may be: no write of that token or user
commits once the revocation has returned. The write answers 200 (it committed first), 401 (a
token revoked or its user deactivated) or 403 (the role lowered), never a 5xx. Before, the
write checked the token and the role only before its transaction (grants were the only thing
checked again inside it), and a write in flight still committed after the revocation.

**A revert needs the version read.** A revert replaces the whole config; one sent without the
partition version undid an admin's queue PATCH saved at the same moment (9 times in 12). Now it
is refused with a 400 naming ``version``; with the version, one of two racing changes is refused
with a 409 and nothing is lost.

gunicorn is the compose ``web`` command (3 workers) on the test database, started once for the
module. The partition has a few hundred queues, so that a save takes long enough for a
revocation to land in the middle of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser

from scheduler_admin.accounts import services as accounts
from scheduler_admin.accounts.tokens import ApiToken, create_token
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue
from tests.integration.test_run_abort_races import request
from tests.support.compose import CONTAINER_BIND, load_compose, native_command, service
from tests.support.factories.partitions import saved_partition
from tests.support.factories.users import user_with_role
from tests.support.processes import ManagedProcess, free_port, test_database_env, wait_until
from tests.support.racing import release_together

pytestmark = pytest.mark.django_db(transaction=True)

PARTITION = "rev"
API = f"/api/v1/partitions/{PARTITION}"
#: Queues of the partition (each trial edits one of its own).
QUEUES = 400
TRIALS = 12


@pytest.fixture(scope="module")
def web(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The compose ``web`` command on the test database; its address."""
    base = tmp_path_factory.mktemp("revocation-races")
    port = free_port()
    args = native_command(
        service(load_compose(), "web")["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
    )
    env = test_database_env({"XDG_RUNTIME_DIR": str(base)}, redis_url=settings.REDIS_URL)
    with ManagedProcess("revocation-web", args, env=env, log_dir=base) as process:
        address = f"127.0.0.1:{port}"

        def healthy() -> bool:
            try:
                return request(address, "GET", "/healthz", token=None)[0] == 200
            except OSError:
                return False

        wait_until(healthy, 60, message="gunicorn never answered", watch=[process])
        yield address


@pytest.fixture
def partition(transactional_db: None) -> Partition:
    children = "\n".join(
        f"          - name: q{i:03d}\n            resources: {{max: {{memory: 100G}}}}"
        for i in range(QUEUES)
    )
    text = f"partitions:\n  - name: {PARTITION}\n    queues:\n      - name: root\n        queues:\n"
    return saved_partition(text + children, comment="fixture")


@pytest.fixture
def admin(transactional_db: None) -> AbstractUser:
    user = get_user_model().objects.create_user("rev-admin", password="pw-rev-admin-1")
    accounts.change_role(user, "admin", actor=None)
    return user


def operator(name: str) -> tuple[AbstractUser, ApiToken, str]:
    user = user_with_role(name, "operator", password="pw-rev-operator-1")
    token, key = create_token(user, name="race", expires_at=None)
    return user, token, key


def patch_queue(web: str, key: str, path: str, memory: str) -> Callable[[], tuple[int, Any]]:
    version = Queue.objects.get(partition__name=PARTITION, path=path).version
    body = {"max": {"memory": memory}, "version": version, "comment": f"{path} to {memory}"}
    return lambda: request(web, "PATCH", f"{API}/queues/{path}/", token=key, body=body)


def saved_by(user: AbstractUser) -> set[int]:
    """The revisions ``user`` authored, as committed now."""
    return set(ConfigRevision.objects.filter(author_id=user.pk).values_list("number", flat=True))


@dataclass
class Race:
    kind: str
    trial: int
    status: int
    seen_at_return: set[int]
    seen_at_end: set[int]

    @property
    def committed_after_return(self) -> set[int]:
        return self.seen_at_end - self.seen_at_return


def race_revocation(
    web: str, kind: str, revoke: Callable[[AbstractUser, ApiToken], object]
) -> list[Race]:
    """``TRIALS`` races of a PATCH by a fresh operator against ``revoke`` of that operator,
    the revocation delayed a little more each trial (0 to about 0.1 s)."""
    races = []
    for trial in range(TRIALS):
        user, token, key = operator(f"{kind}-{trial}")
        write = patch_queue(web, key, f"root.q{trial:03d}", f"{50 + trial}G")
        seen: dict[str, set[int]] = {}
        delay = 0.009 * trial

        def revocation(
            user: AbstractUser = user, token: ApiToken = token, delay: float = delay,
            seen: dict[str, set[int]] = seen,
        ) -> None:  # fmt: skip
            time.sleep(delay)
            revoke(user, token)
            seen["at_return"] = saved_by(user)  # read only once the revocation has returned

        answered, revoked = release_together(write, revocation)
        assert not isinstance(revoked, BaseException), revoked
        assert not isinstance(answered, BaseException), answered
        races.append(Race(kind, trial, answered[0], seen["at_return"], saved_by(user)))
    return races


def check(races: list[Race], refused: int) -> None:
    """Never a write committed after the revocation returned, never a 5xx; a refused write
    answers ``refused``, an allowed one 200 (and then its change is saved)."""
    print([(race.trial, race.status, sorted(race.committed_after_return)) for race in races])
    late = [race for race in races if race.committed_after_return]
    assert not late, f"writes committed after the revocation returned: {late}"
    assert all(race.status in (200, refused) for race in races), races
    for race in races:
        assert bool(race.seen_at_end) == (race.status == 200), race


def test_a_write_in_flight_when_its_token_is_revoked_commits_before_the_revocation_or_not_at_all(
    web: str, partition: Partition, admin: AbstractUser
) -> None:
    """Token revoked (the Users page's Revoke): the write answers 200 having committed before
    the revocation returned, or 401; before, 8 in 12 such writes still committed after it."""
    races = race_revocation(
        web,
        "token",
        lambda user, token: accounts.revoke_token(user, actor=admin, token_id=token.pk),
    )
    check(races, refused=401)


def test_a_write_in_flight_when_its_user_is_made_viewer_commits_before_the_change_or_not_at_all(
    web: str, partition: Partition, admin: AbstractUser
) -> None:
    """Role lowered to viewer: the write answers 200 having committed before the change
    returned, or 403 (a viewer may not edit a queue)."""
    races = race_revocation(
        web, "role", lambda user, token: accounts.change_role(user, "viewer", actor=admin)
    )
    check(races, refused=403)


def test_a_write_in_flight_when_its_user_is_deactivated_commits_before_or_not_at_all(
    web: str, partition: Partition, admin: AbstractUser
) -> None:
    """Account deactivated (its tokens are deleted with it): 200 before, or 401 after."""
    races = race_revocation(
        web, "deactivate", lambda user, token: accounts.set_active(user, False, actor=admin)
    )
    check(races, refused=401)


# --- revert ---------------------------------------------------------------------------------


def admin_key(admin: AbstractUser) -> str:
    return create_token(admin, name=f"race-{time.monotonic_ns()}", expires_at=None)[1]


def revert(web: str, key: str, version: int | None) -> Callable[[], tuple[int, Any]]:
    body: dict[str, Any] = {"comment": "back to the fixture"}
    if version is not None:
        body["version"] = version
    return lambda: request(web, "POST", f"{API}/revisions/1/revert", token=key, body=body)


def test_a_revert_needs_the_version_read_and_never_undoes_a_concurrent_save(
    web: str, partition: Partition, admin: AbstractUser
) -> None:
    """Twelve times an admin PATCHes a queue while another reverts to revision 1 without
    saying which version they read: the revert is a 400 naming ``version`` and changes
    nothing, the PATCH is saved (before, the revert answered 201 and undid the PATCH in 9 of 12
    of these races). Then twelve times the revert carries the partition version both admins
    read: the change that commits second is refused with 409, so the config is either the
    PATCH's or revision 1's, never a revert that silently undid a PATCH answered 200."""
    key = admin_key(admin)
    for trial in range(TRIALS):
        path = f"root.q{trial:03d}"
        saved, reverted = release_together(
            patch_queue(web, key, path, f"{20 + trial}G"), revert(web, key, None)
        )
        assert saved[0] == 200, saved
        assert reverted[0] == 400, reverted
        assert "version" in reverted[1]["errors"], reverted
        assert Queue.objects.get(partition__name=PARTITION, path=path).max == {
            "memory": (20 + trial) * 10**9
        }
    for trial in range(TRIALS):
        path = f"root.q{trial:03d}"
        queue_version = Queue.objects.get(partition__name=PARTITION, path=path).version
        config_services.update_queue(
            PARTITION, path, version=queue_version, actor=admin, comment="set up",
            max={"memory": 90 * 10**9},
        )  # fmt: skip
        version = Partition.objects.get(name=PARTITION).version
        saved, reverted = release_together(
            patch_queue(web, key, path, f"{20 + trial}G"), revert(web, key, version)
        )
        statuses = (saved[0], reverted[0])
        assert statuses in ((200, 409), (409, 201)), (saved, reverted)
        memory = Queue.objects.get(partition__name=PARTITION, path=path).max["memory"]
        assert memory == ((20 + trial) * 10**9 if saved[0] == 200 else 100 * 10**9)
