"""ACLs and the MockCluster's authorizer: who may do what to which resource, decided as Kafka decides.

Why a mock needs one: the failures an application must handle when a broker runs with an authorizer
(TOPIC_AUTHORIZATION_FAILED from Metadata, TRANSACTIONAL_ID_AUTHORIZATION_FAILED from InitProducerId, a
group that may not be read) cannot be tested against a broker that allows everything. The rules are
those of Kafka's ``StandardAuthorizer`` (KRaft) and the ``AclAuthorizer`` before it:

- a super user may do everything;
- a DENY ACL that matches wins over every ALLOW ACL;
- an ALLOW ACL for Read, Write, Delete or Alter also allows Describe, AlterConfigs allows DescribeConfigs,
  and All allows (or, in a DENY ACL, denies) every operation;
- a LITERAL ACL matches its resource name, or every name when the name is ``*``; a PREFIXED ACL matches
  every name starting with its name;
- the principal ``User:*`` matches every principal;
- a resource no ACL names at all (for any principal) is allowed only with
  ``allow_everyone_if_no_acl_found`` (Kafka's ``allow.everyone.if.no.acl.found``, off by default).

Simplifications of the real authorizers:
- ACLs have no host: every ACL applies to every client address (Kafka's host ``*``).
- Four resource types, the ones a transactional pipeline touches: topic, group, transactional id and
  cluster (named ``kafka-cluster``); no delegation-token or user resources, no MATCH/ANY filters.
- :meth:`Authorizer.authorize_by_resource_type` (KIP-679, used by InitProducerId without a transactional
  id) allows when the principal has an ALLOW ACL for the operation (or All) on any resource of the type
  that no DENY ACL of the same principal covers (same literal name, the wildcard ``*``, or a prefix of
  it); Kafka's version also weighs prefixes of allowed prefixes against each other.
- Authorization is not logged (Kafka's authorizer logs every decision at DEBUG/INFO).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable
from typing import TypeVar

import attrs

__all__ = [
    "ANONYMOUS",
    "CLUSTER_NAME",
    "Acl",
    "Authorizer",
    "Operation",
    "PatternType",
    "Permission",
    "ResourceType",
]

#: The principal of a connection that did not authenticate (Kafka's ``KafkaPrincipal.ANONYMOUS``).
ANONYMOUS = "User:ANONYMOUS"
#: The name of the one cluster resource (Kafka's ``Resource.CLUSTER_NAME``).
CLUSTER_NAME = "kafka-cluster"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_RESOURCE = "*"


def _key(text: str) -> str:
    """``"Transactional-Id"`` -> ``"transactionalid"``: names are matched case- and separator-blind."""
    return text.replace("_", "").replace("-", "").replace(" ", "").lower()


_E = TypeVar("_E", bound="_Named")


class _Named(enum.Enum):
    @classmethod
    def parse(cls: type[_E], value: object) -> _E:
        """The member named by ``value`` (a member, or its name in any case, with or without ``_``)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for member in cls:
                if _key(member.name) == _key(value) or _key(str(member.value)) == _key(value):
                    return member
        names = ", ".join(str(m.value) for m in cls)
        raise ValueError(f"unknown {cls.__name__} {value!r}; expected one of {names}")


class ResourceType(_Named):
    """Kafka's ``ResourceType``: what an ACL is about."""

    TOPIC = "topic"
    GROUP = "group"
    TRANSACTIONAL_ID = "transactional_id"
    CLUSTER = "cluster"


class Operation(_Named):
    """Kafka's ``AclOperation`` (the ones its brokers check)."""

    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"


class PatternType(_Named):
    """Kafka's ``PatternType``: ``name`` is the resource's name (or ``"*"``), or a prefix of it."""

    LITERAL = "literal"
    PREFIXED = "prefixed"


class Permission(_Named):
    """Kafka's ``AclPermissionType``: a DENY wins over every ALLOW."""

    ALLOW = "allow"
    DENY = "deny"


#: operation asked -> the ALLOW ACL operations that grant it (All grants everything)
_IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset(
        {Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}
    ),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}),
}


def check_principal(value: str) -> str:
    """``value`` if it is a principal (``Type:name``, e.g. ``User:alice``); ValueError otherwise."""
    kind, sep, name = value.partition(":")
    if not sep or not kind or not name:
        raise ValueError(f"a principal is 'Type:name' (e.g. 'User:alice'), got {value!r}")
    return value


def _resource_type(value: ResourceType | str) -> ResourceType:
    return ResourceType.parse(value)


def _operation(value: Operation | str) -> Operation:
    return Operation.parse(value)


def _pattern(value: PatternType | str) -> PatternType:
    return PatternType.parse(value)


def _permission(value: Permission | str) -> Permission:
    return Permission.parse(value)


@attrs.frozen
class Acl:
    """One ACL binding: ``principal`` may (or, with ``permission="deny"``, may not) do ``operation`` on the
    resources of ``resource_type`` that ``name`` matches under ``pattern``.

    Strings are accepted for the enums in any case (``"topic"``, ``"TransactionalId"``,
    ``"idempotent_write"``); the cluster resource is named ``"kafka-cluster"`` (``"*"`` works too).
    """

    principal: str = attrs.field(converter=check_principal)
    resource_type: ResourceType = attrs.field(converter=_resource_type)
    name: str
    operation: Operation = attrs.field(converter=_operation)
    pattern: PatternType = attrs.field(default=PatternType.LITERAL, converter=_pattern)
    permission: Permission = attrs.field(default=Permission.ALLOW, converter=_permission)

    def matches_resource(self, resource_type: ResourceType, name: str) -> bool:
        if resource_type is not self.resource_type:
            return False
        if self.pattern is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD_RESOURCE)

    def matches_principal(self, principal: str) -> bool:
        return self.principal in (principal, WILDCARD_PRINCIPAL)

    def __str__(self) -> str:
        return (f"{self.permission.value} {self.principal} {self.operation.value} on "
                f"{self.resource_type.value} {self.pattern.value} {self.name!r}")


class Authorizer:
    """The ACLs of a cluster and the decision of each request's check (see the module docstring).

    Thread-safe: handlers ask under the cluster lock while a test adds or removes ACLs from its own
    thread; each change replaces the tuple of ACLs, so a decision sees one consistent set.
    """

    def __init__(
        self,
        acls: Iterable[Acl] = (),
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        self._acls: tuple[Acl, ...] = ()
        for acl in acls:
            self.add(acl)
        self.super_users = frozenset(check_principal(user) for user in super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found

    @property
    def acls(self) -> tuple[Acl, ...]:
        return self._acls

    def add(self, acl: Acl) -> None:
        """Add ``acl`` (adding one that exists changes nothing, as in Kafka)."""
        with self._lock:
            if acl not in self._acls:
                self._acls = (*self._acls, acl)

    def remove(self, acl: Acl) -> bool:
        """Remove ``acl``; False when there was no such ACL."""
        with self._lock:
            if acl not in self._acls:
                return False
            self._acls = tuple(a for a in self._acls if a != acl)
            return True

    def authorize(self, principal: str, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        """Whether ``principal`` may do ``operation`` on the resource ``resource_type``/``name``."""
        if principal in self.super_users:
            return True
        on_resource = [a for a in self._acls if a.matches_resource(resource_type, name)]
        if not on_resource:
            return self.allow_everyone_if_no_acl_found
        mine = [a for a in on_resource if a.matches_principal(principal)]
        if any(a.permission is Permission.DENY and a.operation in (operation, Operation.ALL) for a in mine):
            return False
        granting = _IMPLIED_BY.get(operation, frozenset({operation})) | {Operation.ALL}
        return any(a.permission is Permission.ALLOW and a.operation in granting for a in mine)

    def authorize_by_resource_type(
        self, principal: str, operation: Operation, resource_type: ResourceType
    ) -> bool:
        """Whether ``principal`` may do ``operation`` on *some* resource of ``resource_type`` (KIP-679)."""
        if principal in self.super_users:
            return True
        mine = [a for a in self._acls if a.resource_type is resource_type and a.matches_principal(principal)
                and a.operation in (operation, Operation.ALL)]
        denies = [a for a in mine if a.permission is Permission.DENY]
        for allow in (a for a in mine if a.permission is Permission.ALLOW):
            if not any(_covers(deny, allow) for deny in denies):
                return True
        return False


def _covers(deny: Acl, allow: Acl) -> bool:
    """Whether ``deny`` denies every resource ``allow`` allows."""
    if deny.pattern is PatternType.LITERAL and deny.name == WILDCARD_RESOURCE:
        return True
    if deny.pattern is PatternType.PREFIXED:
        return allow.name.startswith(deny.name)
    return allow.pattern is PatternType.LITERAL and allow.name == deny.name
