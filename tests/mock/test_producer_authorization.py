"""ACLs refusing the producer on MockCluster (TV1 and TV2): each refusal is the documented typed error
within seconds, and the producer recovers where the Java client's does. The scenarios are shared with
the real-broker tier (``tests/_support/authorization.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests._support.authorization import BASE_ACLS, SCENARIOS, AuthzTopics
from tests._support.readers import read_values
from tests._support.security import SecuredTarget, producer_settings, reader_settings
from txnproducer.testing import Acl, MockCluster

pytest.importorskip("trustme")

USERS = {"alice": "alice-secret-pw"}
TOPICS = AuthzTopics.named("t")


@pytest.fixture(params=[1, 2], ids=["tv1", "tv2"])
def cluster(request: pytest.FixtureRequest) -> Iterator[MockCluster]:
    with MockCluster(num_brokers=2, transaction_version=request.param, tls=True,
                     sasl_mechanisms=["SCRAM-SHA-512"], users=USERS,
                     acls=[Acl(*acl) for acl in BASE_ACLS]) as c:
        for topic in (TOPICS.allowed, TOPICS.readonly, TOPICS.forbidden):
            c.create_topic(topic, partitions=1)
        yield c


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_refusal_is_typed_prompt_and_recoverable(cluster: MockCluster, scenario: Callable[..., None]) -> None:
    target = SecuredTarget(cluster.bootstrap_servers, cluster.security_protocol, cluster.ca_file, USERS)

    def committed(topic: str) -> list[bytes]:
        return read_values(cluster.bootstrap_servers, topic, 1, wait_s=20,
                           **reader_settings(target, "SCRAM-SHA-512"))

    settings: dict[str, Any] = producer_settings(target, "SCRAM-SHA-512")
    scenario(settings, cluster, TOPICS, committed)
