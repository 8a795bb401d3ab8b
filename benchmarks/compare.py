"""Side-by-side benchmark: txnproducer vs kafka-python vs confluent-kafka (and Java), transactions.

    python benchmarks/compare.py --bootstrap HOST:PORT    # a real Kafka (must allow transactions)
    python benchmarks/compare.py --kafka-home /path/to/kafka_2.13-4.1.0   # start a one-node KRaft Kafka
    python benchmarks/compare.py                          # $KAFKA_BOOTSTRAP_SERVERS, else $KAFKA_HOME,
                                                          # else a standalone MockCluster subprocess

Clients run in turn, A B C A B C ... for ``--rounds`` rounds, so that drift of the machine or the
broker (log growth, JIT, page cache) hits every client alike; every run is its own subprocess
(``_clients.py``), so each client starts cold and its peak RSS is its own. Every run is bounded
(records and seconds; the subprocess is killed past ``--run-timeout``). Writes ``results.json``
(every run and the medians), ``results.md`` (the table, ratios vs each other client) and
``results.png`` (when matplotlib is installed: ``pip install 'txnproducer[bench]'``).

S1-S3 write (1,000, 1 and 10 records per transaction), S6 ten records over six partitions per transaction
(record i to partition i % 6); S4 is consume-transform-produce (200,000 inputs
of 100 bytes in 6 partitions, ``value.upper()``, a transaction per poll of at most 1,000 inputs with
the consumer's group metadata) and S5 a read-only read_committed read of 200,000 committed records
(``_pipelines.py`` has each client's loop; ``txnproducer`` is the processor with its column transform
in S4 and ``poll_batch`` in S5, ``txnproducer-records``, ``txnproducer-loop`` and ``txnproducer-poll``
our other ways). ``--clients txnproducer,kafka-python,confluent-kafka,java`` adds the Java client as a
reference (needs a JDK and Kafka's client jars from ``--kafka-home``, ``$KAFKA_HOME`` or
``--java-classpath``; see ``_java.py``). ``--clients txnproducer-aio,confluent-aio,aiokafka
--scenarios S2,S3`` compares the asyncio clients (``_aio_clients.py``); the ratios are then
against ``txnproducer-aio``.

Secured listeners (``_secured.py``): a client named ``client@LISTENER`` runs against that listener of
a node started with ``--kafka-home`` that has PLAINTEXT, SASL_SSL (SCRAM-SHA-512) and MTLS (mutual TLS)
listeners, e.g. ``--clients txnproducer@PLAINTEXT,txnproducer@SASL_SSL,confluent-kafka@SASL_SSL``
(the sync Python clients; ``--ours`` names the column the ratios are against).
``txnproducer-kafka-io`` is ours with every request on kafka-python's connections, as secured clusters
were served before our own connections spoke TLS and SASL.

Before and after a change, in the same run: ``--tree main=/tmp/main-tree`` (a checkout of another commit
with its extension built: ``python setup.py build_ext --inplace`` there) adds the column ``txnproducer%main``
(also ``txnproducer-aio%main``, ...), our client from that tree run by this tree's harness.
``--warmup-transactions 6000`` runs that many untimed transactions on each run's producer before the
measured ones (the JVM's CPU per transaction settles after about 6,000); ``--s4-records-per-txn 10``
runs S4 with ten inputs per transaction (the processor's per-transaction commit; not the Java loop).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _clients import (  # noqa: E402
    AIO_CLIENTS,
    CLIENTS,
    KAFKA_IO,
    PURE,
    READ_PARTITIONS,
    READ_SIDE_CLIENTS,
    RECORD_SIZE,
    SCENARIOS,
)
from _java import (  # noqa: E402
    JAVA_CLIENT,
    JAVA_WARMUP_S,
    JavaUnavailable,
    compile_bench,
    java_classpath,
    java_command,
    java_versions,
    pipeline_command,
)
from _pipelines import PIPELINE_CLIENTS, READ_CLIENTS, write_input  # noqa: E402
from _secured import LISTENERS, SecuredBench, secured_kafka, split_column  # noqa: E402

from txnproducer.perf import create_topic, mock_cluster_process  # noqa: E402

PARTITIONS = 3
# the most records a run's warm-up sends (--warmup-transactions of 1,000-record transactions: millions)
WARMUP_RECORDS_MAX = 60_000
OURS = "txnproducer"
OURS_AIO = "txnproducer-aio"
ALL_CLIENTS = (*CLIENTS, PURE, KAFKA_IO, *READ_SIDE_CLIENTS, *AIO_CLIENTS, JAVA_CLIENT)
READ_SCENARIOS = ("S4", "S5")

# (scenario, metric key, label, higher is better)
METRICS: list[tuple[str, str, str, bool]] = [
    ("S1", "records_per_s", "S1 1,000 rec/txn: records/s", True),
    ("S1", "peak_rss_mib", "S1 peak RSS (MiB)", False),
    ("S1", "cpu_us_per_record", "S1 CPU per record (us, all client threads)", False),
    ("S2", "transactions_per_s", "S2 1 rec/txn: transactions/s", True),
    ("S2", "commit_p50", "S2 commit latency p50 (ms)", False),
    ("S2", "cpu_us_per_transaction", "S2 CPU per transaction (us, all client threads)", False),
    ("S3", "commit_p50", "S3 10 rec/txn: commit p50 (ms)", False),
    ("S3", "commit_p95", "S3 commit p95 (ms)", False),
    ("S3", "commit_p99", "S3 commit p99 (ms)", False),
    ("S3", "transactions_per_s", "S3 transactions/s", True),
    ("S3", "cpu_us_per_transaction", "S3 CPU per transaction (us, all client threads)", False),
    ("S6", "commit_p50", "S6 10 rec over 6 partitions/txn: commit p50 (ms)", False),
    ("S6", "transactions_per_s", "S6 transactions/s", True),
    ("S6", "cpu_us_per_transaction", "S6 CPU per transaction (us, all client threads)", False),
    ("S4", "records_per_s", "S4 consume-transform-produce: inputs/s", True),
    ("S4", "cpu_us_per_record", "S4 CPU per input (us, whole process)", False),
    ("S4", "transactions_per_s", "S4 transactions/s", True),
    ("S4", "commit_p50", "S4 commit p50 (ms)", False),
    ("S4", "peak_rss_mib", "S4 peak RSS (MiB)", False),
    ("S5", "records_per_s", "S5 read_committed read-only: records/s", True),
    ("S5", "cpu_us_per_record", "S5 CPU per record (us, whole process)", False),
]


def split_tree(column: str) -> tuple[str, str | None]:
    """``"txnproducer%main"`` -> ("txnproducer", "main"): our client from the source tree named ``main``
    with ``--tree main=DIR`` (before and after a change, in the same run); no ``%``: this tree."""
    client, _, tree = column.partition("%")
    return client, tree or None


def runs_in(client: str, scenario: str, s4_records_per_txn: int | None = None) -> bool:
    """Whether ``client`` (a column: ``client@LISTENER`` and ``client%TREE`` too) takes part in ``scenario``
    (S4 and S5 have their own sets of loops; the Java client's S4 loop has no ``--s4-records-per-txn``)."""
    client = split_tree(split_column(client)[0])[0]
    if client == JAVA_CLIENT:
        return not (scenario == "S4" and s4_records_per_txn is not None)
    if client in AIO_CLIENTS:
        return scenario not in READ_SCENARIOS
    ours = "txnproducer" if client == PURE else client
    if scenario == "S4":
        return ours in PIPELINE_CLIENTS
    if scenario == "S5":
        return ours in READ_CLIENTS
    return client not in READ_SIDE_CLIENTS


def metric_value(run: dict[str, Any], key: str) -> float | None:
    if key.startswith("commit_"):
        value = (run.get("commit_latency_ms") or {}).get(key.split("_", 1)[1])
    else:
        value = run.get(key)
    return None if value is None else float(value)


# --- brokers ---------------------------------------------------------------------------------------------


@contextmanager
def kafka_home_broker(kafka_home: str) -> Iterator[str]:
    """Start a one-node KRaft Kafka with the test tier's starter (tests/broker/conftest.py)."""
    path = ROOT / "tests" / "broker" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_broker_conftest", path)
    if spec is None or spec.loader is None:
        raise RuntimeError("tests/broker/conftest.py not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    workdir = Path(tempfile.mkdtemp(prefix="txnproducer-bench-kafka-"))
    broker = module.KafkaHomeBroker(Path(kafka_home), workdir)
    try:
        broker.start()
        log(f"started Kafka from {kafka_home} at {broker.bootstrap} in {broker.startup_seconds:.1f} s")
        yield str(broker.bootstrap)
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def parse_cpus(text: str | None) -> set[int] | None:
    """``"0"`` or ``"0,2-3"`` -> {0} / {0, 2, 3}; None stays None (no pinning)."""
    if not text:
        return None
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


@contextmanager
def pinned(cpus: set[int] | None) -> Iterator[None]:
    """Run the block (which starts a child process) on ``cpus``: a child inherits its parent's
    CPU affinity when it is created, every thread of a JVM included."""
    if cpus is None:
        yield
        return
    original = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, original)


@contextmanager
def target(args: argparse.Namespace, secured: bool) -> Iterator[tuple[str, str, SecuredBench | None]]:
    """Yield (bootstrap servers, description of what they are, the secured listeners if ``secured``)."""
    broker_cpus = parse_cpus(args.broker_cpus)
    where = "" if broker_cpus is None else f", on CPU {args.broker_cpus}"
    if secured:
        with ExitStack() as stack:
            with pinned(broker_cpus):
                bench = stack.enter_context(secured_kafka(args.kafka_home, ROOT))
            yield bench.plaintext, (f"Apache Kafka from {Path(args.kafka_home).name} (one KRaft node, "
                                    f"127.0.0.1{where}; listeners {', '.join(LISTENERS)})"), bench
    elif args.bootstrap:
        yield args.bootstrap, f"Kafka at {args.bootstrap}", None
    elif args.kafka_home:
        with ExitStack() as stack:
            with pinned(broker_cpus):
                servers = stack.enter_context(kafka_home_broker(args.kafka_home))
            yield servers, (f"Apache Kafka from {Path(args.kafka_home).name} (one KRaft node, "
                            f"127.0.0.1{where})"), None
    else:
        with ExitStack() as stack:
            with pinned(broker_cpus):
                servers = stack.enter_context(mock_cluster_process(
                    brokers=1, transaction_version=args.transaction_version, partitions=PARTITIONS))
            yield servers, (f"txnproducer MockCluster in a separate process (1 broker, "
                            f"transaction.version={args.transaction_version}{where})"), None


def prefill(bootstrap: str, topic: str, count: int, abort_every: int = 0) -> int:
    """Write S4's or S5's input: ``count`` committed records in 1,000-record transactions, round robin
    over the partitions (every ``abort_every``-th transaction aborted: S5's readers filter them);
    returns the records committed."""
    return write_input(bootstrap, topic, READ_PARTITIONS, count, RECORD_SIZE, abort_every)


# --- running -------------------------------------------------------------------------------------------


def log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def run_client(column: str, scenario: str, bootstrap: str, topic: str, input_topic: str | None,
               num_records: int | None, max_seconds: float, run_timeout: float,
               cpus: set[int] | None = None, java: tuple[str, Path] | None = None,
               batch_size: int | None = None, secured: SecuredBench | None = None,
               warmup_transactions: int = 0, s4_records_per_txn: int | None = None,
               trees: dict[str, Path] | None = None) -> dict[str, Any]:
    """One run in its own process; ``java`` is (class path, compiled classes) for the Java client;
    ``batch_size`` the same batch size in bytes for every client (None: each client's default);
    ``secured`` the listeners a ``client@LISTENER`` column runs against; ``warmup_transactions`` untimed
    transactions before the measured ones (S1-S3, S6: at most 50,000 records of them); ``trees`` the
    source trees a ``txnproducer%TREE`` column runs from."""
    client, listener = split_column(column)
    client, tree = split_tree(client)
    spec = SCENARIOS[scenario]
    warmup_transactions = min(warmup_transactions, max(1, WARMUP_RECORDS_MAX // spec["records_per_txn"])) \
        if warmup_transactions and scenario not in READ_SCENARIOS else 0
    if secured is not None:
        bootstrap = secured.bootstrap_of(listener)
    if client == JAVA_CLIENT:
        if java is None:
            raise ValueError("the java client needs its class path and compiled classes")
        count = num_records or SCENARIOS[scenario]["num_records"]
        if scenario in READ_SCENARIOS:
            mode, read = ("ctp", input_topic or "") if scenario == "S4" else ("read", topic)
            cmd = pipeline_command(java[0], java[1], mode, bootstrap, read, topic, count, max_seconds,
                                   RECORD_SIZE, READ_PARTITIONS, JAVA_WARMUP_S)
        else:
            cmd = java_command(java[0], java[1], bootstrap, topic, spec["records_per_txn"],
                               count, max_seconds, RECORD_SIZE, JAVA_WARMUP_S, batch_size,
                               warmup_transactions, spec.get("spread"))
    else:
        cmd = [sys.executable, str(HERE / "_clients.py"), "--client", client, "--scenario", scenario,
               "--bootstrap", bootstrap, "--topic", topic, "--max-seconds", str(max_seconds)]
        if num_records is not None:
            cmd += ["--num-records", str(num_records)]
        if input_topic is not None:
            cmd += ["--input-topic", input_topic]
        if batch_size is not None:
            cmd += ["--batch-size", str(batch_size)]
        if warmup_transactions:
            cmd += ["--warmup-transactions", str(warmup_transactions)]
        if s4_records_per_txn is not None and scenario == "S4":
            cmd += ["--s4-records-per-txn", str(s4_records_per_txn)]
        if secured is not None and listener != "PLAINTEXT":
            cmd += ["--security-config", str(secured.settings_file(listener))]
    env = dict(os.environ)
    if tree is not None:  # the tree's txnproducer ahead of this one's (the harness stays this tree's)
        if trees is None or tree not in trees:
            raise ValueError(f"{column!r}: no --tree {tree}=DIR")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(trees[tree]), env.get("PYTHONPATH")) if p)
    env.pop("TXNPRODUCER_PURE_PYTHON", None)
    if client == PURE:  # txnproducer on its pure-Python hot path
        env["TXNPRODUCER_PURE_PYTHON"] = "1"
    started = time.monotonic()
    try:
        with pinned(cpus):
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=run_timeout, check=False,
                                  env=env)
    except subprocess.TimeoutExpired:
        return {"client": column, "scenario": scenario, "error": f"killed after {run_timeout:.0f} s"}
    wall = time.monotonic() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout)[-1500:]
        return {"client": column, "scenario": scenario, "error": f"exit {proc.returncode}: {tail}"}
    result: dict[str, Any] = json.loads(lines[-1])
    result["client"] = column
    result["wall_s"] = wall
    result["scenario"] = scenario
    if "cpus" not in result and hasattr(os, "sched_getaffinity"):  # the JVM does not say
        result["cpus"] = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    return result


def medians(runs: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """{scenario: {client: {metric: median over the successful runs}}}."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    columns = sorted({str(r.get("client")) for r in runs})
    for scenario, key, _, _ in METRICS:
        for client in columns:
            values = [v for r in runs if r.get("scenario") == scenario and r.get("client") == client
                      and "error" not in r and "skipped" not in r and not r.get("warmup")
                      for v in [metric_value(r, key)] if v is not None]
            if values:
                out.setdefault(scenario, {}).setdefault(client, {})[key] = statistics.median(values)
    return out


def ratio(ours: float | None, theirs: float | None, higher_is_better: bool) -> float | None:
    """How many times better ours is (>1 = ours better), for throughput and latency alike."""
    if ours is None or theirs is None or ours <= 0 or theirs <= 0:
        return None
    return ours / theirs if higher_is_better else theirs / ours


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def ours_of(clients: list[str], ours: str | None = None) -> str:
    """The client the ratios are against: ``ours`` when given, the asyncio one when it runs (an asyncio
    comparison), else txnproducer (the first txnproducer column with secured listeners)."""
    if ours is not None:
        return ours
    if OURS_AIO in clients or OURS in clients:
        return OURS_AIO if OURS_AIO in clients else OURS
    return next((c for c in clients if split_column(c)[0] == OURS), OURS)


def markdown_table(med: dict[str, dict[str, dict[str, float]]], clients: list[str],
                   ours: str | None = None) -> str:
    ours_name = ours_of(clients, ours)
    others = [c for c in clients if c != ours_name]
    head = ["metric (median)", *clients, *[f"ours vs {c}" for c in others]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for scenario, key, label, higher in METRICS:
        row = med.get(scenario, {})
        if not row:
            continue
        cells = [_fmt(row.get(c, {}).get(key)) for c in clients]
        ours = row.get(ours_name, {}).get(key)
        ratios = []
        for other in others:
            r = ratio(ours, row.get(other, {}).get(key), higher)
            ratios.append("-" if r is None else f"{r:.2f}x")
        lines.append("| " + " | ".join([label, *cells, *ratios]) + " |")
    lines.append("")
    lines.append("Ratios are 'times better': throughput ours/theirs, latency, RSS and CPU theirs/ours.")
    return "\n".join(lines)


def chart(med: dict[str, dict[str, dict[str, float]]], clients: list[str], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not installed: no chart (pip install 'txnproducer[bench]')")
        return False
    panels = [("S1", "records_per_s", "S1: records/s (1,000/txn)"),
              ("S2", "transactions_per_s", "S2: transactions/s (1/txn)"),
              ("S3", None, "S3: commit latency ms (10/txn)"),
              ("S4", "records_per_s", "S4: consume-transform-produce inputs/s")]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    colors = {"txnproducer": "#2a7ab9", "kafka-python": "#999999", "confluent-kafka": "#e07b39",
              JAVA_CLIENT: "#5b8c3a", "txnproducer-aio": "#2a7ab9", "confluent-aio": "#e07b39",
              "aiokafka": "#8e6bb8"}

    def color_of(column: str) -> str:
        """A column's library's colour; another tree's (``%TREE``) or listener's column a paler one."""
        library, tree = split_tree(split_column(column)[0])
        base = colors.get(library, "#777777")
        return "#9ecae1" if tree is not None or "@" in column else base
    for ax, (scenario, key, panel_title) in zip(axes.flat, panels, strict=True):
        ax.set_title(panel_title, fontsize=10)
        row = med.get(scenario, {})
        if key is None:
            width = 0.8 / max(len(clients), 1)
            for i, client in enumerate(clients):
                values = [row.get(client, {}).get(f"commit_{p}", 0.0) for p in ("p50", "p95", "p99")]
                ax.bar([x + i * width for x in range(3)], values, width, label=client,
                       color=color_of(client))
            ax.set_xticks([x + width * (len(clients) - 1) / 2 for x in range(3)], ["p50", "p95", "p99"])
            ax.legend(fontsize=8)
        else:
            present = [c for c in clients if key in row.get(c, {})]
            if not present:
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
                ax.set_xticks([])
                continue
            values = [row[c][key] for c in present]
            bars = ax.bar(present, values, color=[color_of(c) for c in present])
            ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=8)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name, module in (("kafka-python", "kafka"), ("confluent-kafka", "confluent_kafka"),
                         ("aiokafka", "aiokafka")):
        try:
            out[name] = __import__(module).__version__
        except Exception as exc:  # a missing client is reported, not fatal
            out[name] = f"unavailable ({exc})"
    try:
        import confluent_kafka

        out["librdkafka"] = confluent_kafka.libversion()[0]
    except Exception:
        pass
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="a running Kafka; default: a standalone MockCluster subprocess")
    parser.add_argument("--kafka-home", help="start a one-node Kafka from this unpacked distribution")
    parser.add_argument("--transaction-version", type=int, choices=(1, 2), default=2,
                        help="transaction.version of the MockCluster (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of A B C (default 3)")
    parser.add_argument("--warmup-rounds", type=int, default=0,
                        help="rounds run first and left out of the medians (a freshly started broker's "
                             "JIT makes its first minute slow for every client)")
    parser.add_argument("--scenarios", default="S1,S2,S3,S4,S5", help="comma-separated (default all)")
    parser.add_argument("--clients", default=",".join(CLIENTS),
                        help="comma-separated (default the three Python clients; add 'java' for the "
                             "Java client as a reference, 'txnproducer-pure' for ours on its pure-Python "
                             "hot path; txnproducer-aio,confluent-aio,aiokafka for the asyncio clients; "
                             "txnproducer-records, txnproducer-loop (S4) and txnproducer-poll (S5) for "
                             "our other ways through the read-side scenarios)")
    parser.add_argument("--java-classpath",
                        help="class path with Kafka's client jars for the java client (default "
                             "<--kafka-home or $KAFKA_HOME>/libs/*)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiply each scenario's record count (e.g. 0.1 for a quick look)")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="per-run time bound (default per scenario: S1 20, S2/S3 15, S4/S5 60)")
    parser.add_argument("--run-timeout", type=float, default=120.0,
                        help="kill a run subprocess after this long (default 120 s)")
    parser.add_argument("--out-dir", default=str(HERE / "results"), help="default benchmarks/results")
    parser.add_argument("--label", help="describe the target in the table and chart (e.g. 'Kafka 4.1.0')")
    parser.add_argument("--broker-cpus",
                        help="run the broker compare.py starts (--kafka-home, or the MockCluster) on these "
                             "CPUs, e.g. 0 (Linux); pin a --bootstrap broker yourself (taskset -a -p)")
    parser.add_argument("--client-cpus", help="run every client on these CPUs, e.g. 1 (Linux)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="the same batch size in bytes for every client, S1-S3 (default: each "
                             "client's own: 262144 for txnproducer, 16384 for kafka-python and "
                             "Java, 1000000 for librdkafka)")
    parser.add_argument("--ours", help="the column the ratios are against (default txnproducer, or the "
                                         "first txnproducer@LISTENER column)")
    parser.add_argument("--warmup-transactions", type=int, default=0,
                        help="untimed transactions each S1-S3/S6 run sends before its measured ones, on the "
                             "same producer (at most 60,000 records; the JVM needs about 6,000 small "
                             "transactions before its CPU per transaction settles; default 0)")
    parser.add_argument("--s4-records-per-txn", type=int, default=None,
                        help="S4's inputs per transaction (default 1,000); the Java client skips S4 then")
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR",
                        help="another source tree of txnproducer (its extension built), run as the column "
                             "txnproducer%%LABEL (or txnproducer-aio%%LABEL ...): before and after a change "
                             "in the same run")
    parser.add_argument("--mock", action="store_true",
                        help="use a standalone MockCluster even when $KAFKA_BOOTSTRAP_SERVERS or "
                             "$KAFKA_HOME is set")
    args = parser.parse_args(argv)
    if not (args.bootstrap or args.kafka_home or args.mock):  # the same order as the broker test tier
        args.bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or None
        if not args.bootstrap:
            args.kafka_home = os.environ.get("KAFKA_HOME") or None
    # Stop cleanly on SIGTERM, and on SIGINT even when started in the background (where it is
    # ignored by default): the finally blocks stop the run subprocess and the broker we started.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    signal.signal(signal.SIGINT, signal.default_int_handler)

    scenarios = [s.strip().upper() for s in args.scenarios.split(",") if s.strip()]
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    for s in scenarios:
        if s not in SCENARIOS:
            parser.error(f"unknown scenario {s!r}; one of {', '.join(SCENARIOS)}")
    trees: dict[str, Path] = {}
    for spec in args.tree:
        label, _, directory = spec.partition("=")
        if not label or not directory or not (Path(directory) / "txnproducer" / "__init__.py").is_file():
            parser.error(f"--tree {spec!r}: expected LABEL=DIR, DIR a txnproducer source tree")
        trees[label] = Path(directory).resolve()
    for c in clients:
        client, listener = split_column(c)
        client, tree = split_tree(client)
        if tree is not None and (tree not in trees or client not in (*CLIENTS, PURE, *AIO_CLIENTS,
                                                                      *READ_SIDE_CLIENTS)
                                 or not client.startswith("txnproducer")):
            parser.error(f"{c!r}: a %TREE column is one of our clients, with --tree {tree}=DIR")
        if client not in ALL_CLIENTS:
            parser.error(f"unknown client {client!r}; one of {', '.join(ALL_CLIENTS)}")
        if listener not in LISTENERS:
            parser.error(f"unknown listener {listener!r} in {c!r}; one of {', '.join(LISTENERS)}")
        if listener != "PLAINTEXT" and client not in (*CLIENTS, PURE, KAFKA_IO):
            parser.error(f"{c!r}: secured listeners are for the sync Python clients ({', '.join(CLIENTS)})")
    secured = any("@" in c for c in clients)
    if secured and not args.kafka_home:
        parser.error("client@LISTENER columns need --kafka-home (compare.py starts the secured node)")
    if secured and set(scenarios) & set(READ_SCENARIOS):
        parser.error("client@LISTENER columns are for S1-S3")
    if args.ours is not None and args.ours not in clients:
        parser.error(f"--ours {args.ours!r} is not one of --clients")
    if args.batch_size is not None and (args.batch_size < 1 or set(scenarios) & set(READ_SCENARIOS)
                                        or set(clients) & set(AIO_CLIENTS)):
        parser.error("--batch-size takes bytes >= 1 and is for the sync clients' S1-S3")
    if args.java_classpath and JAVA_CLIENT not in clients:
        parser.error("--java-classpath is for the java client: add java to --clients")
    java_cp: str | None = None
    if JAVA_CLIENT in clients:
        try:
            java_cp = java_classpath(args.java_classpath, args.kafka_home or os.environ.get("KAFKA_HOME"))
        except JavaUnavailable as exc:
            parser.error(str(exc))
    try:
        client_cpus = parse_cpus(args.client_cpus)
        parse_cpus(args.broker_cpus)
    except ValueError:
        parser.error(f"CPU lists look like 0 or 0,2-3; got {args.client_cpus!r} / {args.broker_cpus!r}")
    if (client_cpus or args.broker_cpus) and not hasattr(os, "sched_setaffinity"):
        parser.error("--client-cpus/--broker-cpus need Linux (os.sched_setaffinity)")
    if args.broker_cpus and args.bootstrap:
        parser.error("--broker-cpus pins a broker compare.py starts; pin a --bootstrap broker with "
                     "taskset -a -p CPUS PID")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = uuid.uuid4().hex[:6]
    runs: list[dict[str, Any]] = []
    started = time.time()
    with ExitStack() as stack:
        java: tuple[str, Path] | None = None
        if java_cp is not None:
            classes = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="txnproducer-bench-java-")))
            try:
                java = (java_cp, compile_bench(java_cp, classes))
            except JavaUnavailable as exc:
                parser.error(str(exc))
        bootstrap, description, listeners = stack.enter_context(target(args, secured))
        description = args.label or description
        log(f"target: {description}")
        # S1-S4 write a topic per client; S4 reads its input, S5 reads its own (every tenth
        # transaction aborted)
        topics = {(s, c): f"bench-{s.lower()}-{c.replace('@', '-').replace('%', '-').lower()}-{suffix}"
                  for s in scenarios for c in clients if s != "S5" and runs_in(c, s, args.s4_records_per_txn)}
        inputs = {s: f"bench-{s.lower()}-in-{suffix}" for s in READ_SCENARIOS if s in scenarios}
        for (scenario, _client), topic in topics.items():
            create_topic(bootstrap, topic, READ_PARTITIONS if scenario in READ_SCENARIOS
                         else max(PARTITIONS, SCENARIOS[scenario].get("spread") or 0))
        counts = {s: max(1, int(SCENARIOS[s]["num_records"] * args.scale)) for s in scenarios}
        for scenario, topic in inputs.items():
            create_topic(bootstrap, topic, READ_PARTITIONS)
            log(f"filling {topic} with {counts[scenario]} committed records for {scenario}")
            counts[scenario] = prefill(bootstrap, topic, counts[scenario],
                                       abort_every=10 if scenario == "S5" else 0)
        for round_no in range(1 - args.warmup_rounds, args.rounds + 1):
            for scenario in scenarios:
                for client in clients:
                    if not runs_in(client, scenario, args.s4_records_per_txn):
                        continue
                    bound = args.max_seconds or SCENARIOS[scenario]["max_seconds"]
                    topic = inputs["S5"] if scenario == "S5" else topics[(scenario, client)]
                    read = inputs.get("S4") if scenario == "S4" else None
                    result = run_client(client, scenario, bootstrap, topic, read, counts[scenario], bound,
                                        args.run_timeout, client_cpus, java, args.batch_size, listeners,
                                        args.warmup_transactions, args.s4_records_per_txn, trees)
                    result["round"] = round_no
                    if round_no < 1:
                        result["warmup"] = True
                    runs.append(result)
                    if "error" in result or "skipped" in result:
                        why = result.get("error") or result["skipped"]
                        log(f"round {round_no} {scenario} {client}: {why}")
                    else:
                        lat = result["commit_latency_ms"]
                        commits = (f"commit p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms, "
                                   if lat.get("p50") is not None else "")
                        log(f"round {round_no if round_no > 0 else 'warm-up'} {scenario} {client}: "
                            f"{result['records_per_s']:,.0f} rec/s, "
                            f"{result['transactions_per_s']:,.1f} txn/s, {commits}"
                            f"{result['cpu_us_per_record']:.2f} us CPU/record, "
                            f"RSS {result['peak_rss_mib']:.1f} MiB")
    med = medians(runs)
    machine = (f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
               f"Python {platform.python_version()}")
    if args.client_cpus:
        machine += f", clients on CPU {args.client_cpus}"
    report = {
        "target": description,
        "machine": machine,
        "versions": versions() | (java_versions(java_cp) if java_cp else {}),
        "started_unix": started,
        "rounds": args.rounds,
        "warmup_rounds": args.warmup_rounds,
        "warmup_transactions": args.warmup_transactions,
        "s4_records_per_txn": args.s4_records_per_txn,
        "trees": {label: str(path) for label, path in trees.items()},
        "scenarios": {s: SCENARIOS[s] | {"num_records": counts[s]} for s in scenarios},
        "runs": runs,
        "medians": med,
    }
    (out_dir / "results.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    table = markdown_table(med, clients, args.ours)
    warmup = f" after {args.warmup_rounds} warm-up round(s)" if args.warmup_rounds else ""
    if args.warmup_transactions:
        warmup += f", each run after {args.warmup_transactions} untimed transactions (at most " \
                  f"{WARMUP_RECORDS_MAX:,} records)"
    if args.s4_records_per_txn:
        warmup += f", S4 at {args.s4_records_per_txn} inputs per transaction"
    if trees:
        warmup += "; " + ", ".join(f"txnproducer%{label} = {path}" for label, path in trees.items())
    batching = (f"batch size {args.batch_size} bytes for every client" if args.batch_size is not None
                else "each client's default batch size")
    header = (f"Target: {description}. Machine: {machine}. {args.rounds} rounds{warmup}, medians; "
              f"100-byte values, linger 5 ms, 3 partitions (S4, S5, S6: {READ_PARTITIONS}), {batching}.\n\n")
    (out_dir / "results.md").write_text(header + table + "\n")
    if chart(med, clients, out_dir / "results.png", f"Transactional producers — {description}"):
        log(f"chart: {out_dir / 'results.png'}")
    print(header + table)
    failed = [r for r in runs if "error" in r]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
