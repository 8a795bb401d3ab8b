"""The folder tree is the architecture: rooms import only what their package docstring allows.

Why a test: the layout (docs/architecture.md) is only worth having while it stays true. These
checks read every module of ``txnproducer`` with ``ast`` - imports inside functions and under
``if TYPE_CHECKING:`` count too, because a cycle hidden there is still a cycle a reader has to
untangle - and fail with the offending modules named:

* no import circle among library modules;
* each room imports only the rooms its package docstring says it may (``ALLOWED`` mirrors them);
* no module over 600 lines unless its docstring says why it must be one piece;
* every package's ``__init__`` says what the room holds and what it may import.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "txnproducer"
MAX_LINES = 600

_GROUP_ROOM_IMPORTS = (
    "txnproducer.errors", "txnproducer.config", "txnproducer._internal.protocol",
    "txnproducer._internal.network", "txnproducer._internal.log",
)
#: what both group protocols' members share: every module of the group room outside classic/ and kip848/
_GROUP_SHARED = tuple(
    f"txnproducer._internal.group.{p.stem}" for p in (PACKAGE / "_internal" / "group").glob("*.py")
    if p.stem != "__init__"
)

# room (module prefix) -> the txnproducer modules it may import, besides its own room. The first
# matching prefix wins, so the more specific rooms come first.
ALLOWED: list[tuple[str, tuple[str, ...]]] = [
    # which implementation of the per-record path runs (compiled or pure): a leaf
    ("txnproducer._internal.accel", ()),
    ("txnproducer._internal.protocol", ("txnproducer._internal.accel",)),
    ("txnproducer._internal.log", ()),
    ("txnproducer._internal.metrics", ()),
    ("txnproducer._internal.partitioner", ()),
    ("txnproducer._internal.properties_file", ()),
    ("txnproducer._internal.call_warnings", ()),
    ("txnproducer._internal.listeners", ("txnproducer._internal.log",)),
    ("txnproducer.errors", ("txnproducer._internal.protocol",)),
    ("txnproducer.prepared", ("txnproducer.errors",)),
    ("txnproducer._internal.config_checks", ("txnproducer.errors",)),
    ("txnproducer._internal.send_checks", ("txnproducer.errors", "txnproducer._internal.partitioner")),
    ("txnproducer._internal.librdkafka_names", ()),
    ("txnproducer._internal.config_names", ("txnproducer.errors", "txnproducer._internal.librdkafka_names")),
    ("txnproducer.oauth", ("txnproducer.errors",)),
    ("txnproducer.config", ("txnproducer.errors", "txnproducer._internal.config_checks",
                            "txnproducer._internal.config_names")),
    ("txnproducer.consumer_config", (
        "txnproducer.errors", "txnproducer.config", "txnproducer._internal.config_checks",
        "txnproducer._internal.config_names", "txnproducer._internal.group.settings",
    )),
    ("txnproducer._internal.network", (
        "txnproducer.errors", "txnproducer.config", "txnproducer.oauth", "txnproducer._internal.protocol",
        "txnproducer._internal.log", "txnproducer._internal.listeners",
    )),
    ("txnproducer._internal.batching", (
        "txnproducer.errors", "txnproducer._internal.protocol", "txnproducer._internal.log",
        "txnproducer._internal.listeners", "txnproducer._internal.accel",
    )),
    ("txnproducer._internal.txn", (
        "txnproducer.errors", "txnproducer.prepared", "txnproducer._internal.protocol",
        "txnproducer._internal.metrics", "txnproducer._internal.log",
    )),
    # the read side: fetch and decode (knows nothing of writing)
    ("txnproducer._internal.fetch", (
        "txnproducer.errors", "txnproducer.consumer_config", "txnproducer._internal.protocol",
        "txnproducer._internal.network", "txnproducer._internal.accel", "txnproducer._internal.log",
    )),
    # consumer group membership: our own members of both group protocols over the network room's
    # connections; each protocol's member uses the room's shared modules, never the other protocol's
    ("txnproducer._internal.group.classic", (*_GROUP_ROOM_IMPORTS, *_GROUP_SHARED)),
    ("txnproducer._internal.group.kip848", (*_GROUP_ROOM_IMPORTS, *_GROUP_SHARED)),
    ("txnproducer._internal.group", _GROUP_ROOM_IMPORTS),
    # what a Produce answer's error code means: a table over the protocol's codes
    ("txnproducer._internal.produce_errors", ("txnproducer.errors", "txnproducer._internal.protocol")),
    ("txnproducer._internal.overdue", (
        "txnproducer._internal.network", "txnproducer._internal.batching", "txnproducer._internal.protocol",
        "txnproducer._internal.log",
    )),
    # what a Produce answer does to its batches: the Sender's, never the Sender itself
    ("txnproducer._internal.produce_outcomes", (
        "txnproducer.errors", "txnproducer.config", "txnproducer._internal.protocol",
        "txnproducer._internal.network", "txnproducer._internal.batching", "txnproducer._internal.txn",
        "txnproducer._internal.produce_errors",
    )),
    ("txnproducer._internal.sender", (
        "txnproducer.errors", "txnproducer.config", "txnproducer._internal.protocol",
        "txnproducer._internal.network", "txnproducer._internal.batching", "txnproducer._internal.txn",
        "txnproducer._internal.log", "txnproducer._internal.metrics", "txnproducer._internal.overdue",
        "txnproducer._internal.listeners", "txnproducer._internal.produce_errors",
        "txnproducer._internal.produce_outcomes",
    )),
    # OpenTelemetry: told by the producer's parts through their hooks, never importing the producer
    ("txnproducer.otel", (
        "txnproducer.errors", "txnproducer.config", "txnproducer._internal.log",
        "txnproducer._internal.metrics", "txnproducer._internal.protocol",
        "txnproducer._internal.batching.batch", "txnproducer._internal.txn.state",
    )),
    ("txnproducer.producer", (
        "txnproducer.errors", "txnproducer.config", "txnproducer.prepared", "txnproducer._internal",
        "txnproducer.otel",
    )),
    ("txnproducer.eos", (
        "txnproducer.errors", "txnproducer.config", "txnproducer.producer", "txnproducer.consumer",
        "txnproducer.consumer_config", "txnproducer._internal.log", "txnproducer.otel",
    )),
    ("txnproducer.aio", (
        "txnproducer.errors", "txnproducer.config", "txnproducer.producer", "txnproducer.pool",
        "txnproducer._internal.log",
        "txnproducer._internal.listeners", "txnproducer._internal.txn.result",
        "txnproducer._internal.txn.state", "txnproducer._internal.batching.batch",
    )),
    # the txnkafka data source: each direction in its own folder, the registered class above them
    ("txnproducer.spark.sink", (
        "txnproducer.errors", "txnproducer.config", "txnproducer.prepared", "txnproducer.producer",
        "txnproducer._internal.log", "txnproducer._internal.network.redaction", "txnproducer.otel",
        "txnproducer.spark.kafka_options",
        # the state topic's reads and writes, on the admin tools' synchronous connection
        "txnproducer.admin.connection", "txnproducer.admin.settings", "txnproducer.admin.results",
        "txnproducer.admin.metadata", "txnproducer.admin.create_topics", "txnproducer.admin.describe_configs",
        "txnproducer.admin.list_offsets", "txnproducer.admin.fetch", "txnproducer.admin.produce",
        "txnproducer.admin.describe_transactions",
    )),
    # the source: the consumer on executors, the admin tools' connection and requests on the driver
    ("txnproducer.spark.source", (
        "txnproducer.errors", "txnproducer.config", "txnproducer.consumer", "txnproducer.consumer_config",
        "txnproducer._internal.log", "txnproducer.spark.kafka_options", "txnproducer.admin.connection",
        "txnproducer.admin.metadata", "txnproducer.admin.list_offsets", "txnproducer.admin.settings",
        "txnproducer.admin.results", "txnproducer.admin.errors",
    )),
    ("txnproducer.spark", (
        "txnproducer.errors", "txnproducer.config", "txnproducer.prepared", "txnproducer.producer",
        "txnproducer._internal.log", "txnproducer._internal.network.redaction", "txnproducer.otel",
    )),
    ("txnproducer.testing", ("txnproducer._internal.protocol", "txnproducer._internal.log")),
    # the operator's tools: a client of the cluster on the producer's network, reading the sink's state
    ("txnproducer.admin", (
        "txnproducer.errors", "txnproducer.config", "txnproducer.prepared", "txnproducer._internal.network",
        "txnproducer._internal.protocol", "txnproducer._internal.log",
        "txnproducer._internal.properties_file",
        "txnproducer.spark.sink.decision", "txnproducer.spark.sink.state_topic",
        "txnproducer.spark.sink.options", "txnproducer.spark.sink.id_pool",
    )),
    # the public entry points and tools may use any room
    ("txnproducer", ("txnproducer",)),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


MODULES = _modules()


def _resolve(current: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = current.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _imports(name: str, path: Path) -> Iterator[str]:
    """Every txnproducer module ``name`` imports, wherever the import statement stands."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node.level, node.module)
            # ``from pkg import sub`` imports the module pkg.sub when there is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # ``import a.b.c`` of a package path
                target = target.rpartition(".")[0]
            if target.startswith("txnproducer") and target != name:
                yield target


GRAPH = {name: sorted(set(_imports(name, path))) for name, path in MODULES.items()}


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def _room(name: str) -> tuple[str, tuple[str, ...]]:
    for prefix, allowed in ALLOWED:
        if name == prefix or name.startswith(prefix + "."):
            return prefix, allowed
    raise AssertionError(f"{name} belongs to no room of ALLOWED: add it")


def _within(target: str, prefixes: tuple[str, ...]) -> bool:
    return any(target == p or target.startswith(p + ".") for p in prefixes)


def test_the_checker_sees_the_library() -> None:
    # a checker that found no modules or no imports would pass every test below
    assert "txnproducer._internal.txn.manager" in GRAPH
    assert "txnproducer._internal.txn.handler" in GRAPH["txnproducer._internal.txn.end_txn"]


def test_the_checker_finds_a_circle() -> None:
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert _cycles({"a": ["b"], "b": []}) == []


def test_no_import_circle_among_library_modules() -> None:
    assert _cycles(GRAPH) == []


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_each_room_imports_only_what_it_may(name: str) -> None:
    room, allowed = _room(name)
    wrong = [t for t in GRAPH[name] if not _within(t, (room, *allowed))]
    assert not wrong, f"{name} (room {room}) imports {wrong}; its room may import {list(allowed)}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_over_600_lines_without_a_reason(name: str) -> None:
    path = MODULES[name]
    lines = len(path.read_text().splitlines())
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert lines <= MAX_LINES or "Why one piece" in doc, (
        f"{path.relative_to(ROOT)} has {lines} lines: split it, or say in its docstring why it must"
        " be one piece"
    )


@pytest.mark.parametrize("name", sorted(n for n, p in MODULES.items() if p.name == "__init__.py"))
def test_every_package_says_what_it_holds_and_may_import(name: str) -> None:
    doc = ast.get_docstring(ast.parse(MODULES[name].read_text())) or ""
    assert doc, f"{name} has no docstring"
    if name != "txnproducer":
        assert "may import" in doc, f"{name}'s docstring does not say what the room may import"


# --- kafka-python: the protocol's dictionary, never a connection layer (DESIGN: "One network stack") ----

#: kafka-python's packages that are a client or a connection layer: importing any of them would bring
#: back a second network stack (and its loggers) or tie us to internals that change between releases
KAFKA_PYTHON_CLIENTS = ("kafka.net", "kafka.client_async", "kafka.conn", "kafka.coordinator",
                        "kafka.consumer", "kafka.producer", "kafka.admin", "kafka.cluster", "kafka.future",
                        "kafka.metrics", "kafka.sasl")
#: the names ``kafka`` itself exports that are its clients
KAFKA_PYTHON_CLIENT_NAMES = {"KafkaConsumer", "KafkaProducer", "KafkaAdminClient", "KafkaClient"}


def _kafka_python_imports(path: Path) -> Iterator[tuple[int, str]]:
    """Every kafka-python module and name ``path`` imports: (line, dotted name)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "kafka" or alias.name.startswith("kafka."):
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None \
                and (node.module == "kafka" or node.module.startswith("kafka.")):
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def _forbidden(name: str) -> bool:
    parts = name.split(".")
    if any(part.startswith("_") for part in parts):
        return True  # an underscore name of kafka-python: private, may change in any release
    if len(parts) == 2 and parts[1] in KAFKA_PYTHON_CLIENT_NAMES:  # from kafka import KafkaConsumer
        return True
    return any(name == p or name.startswith(p + ".") for p in KAFKA_PYTHON_CLIENTS)


def test_the_kafka_python_rule_sees_what_it_must() -> None:
    assert _forbidden("kafka.net.selector.NetworkSelector")
    assert _forbidden("kafka.KafkaConsumer")
    assert _forbidden("kafka.protocol.frame._private")
    assert not _forbidden("kafka.protocol.metadata.MetadataRequest")
    assert not _forbidden("kafka.errors")


@pytest.mark.parametrize("name", sorted(MODULES))
def test_kafka_python_is_only_the_protocol_dictionary(name: str) -> None:
    """No module of the library imports kafka-python's clients, connection layer or private names:
    kafka-python supplies message classes, errors, structs and codecs (DESIGN.md)."""
    path = MODULES[name]
    wrong = [f"line {line}: {target}" for line, target in _kafka_python_imports(path) if _forbidden(target)]
    assert not wrong, f"{path.relative_to(ROOT)} imports kafka-python's client or private code: {wrong}"
