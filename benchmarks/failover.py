"""Failover time: how long each client's commits stop while a broker is killed -9 or frozen (SIGSTOP).

    python benchmarks/failover.py --kafka-home /path/to/kafka_2.13-4.1.0   # all clients and faults, 3 times
    python benchmarks/failover.py --kafka-home ... --faults leader-stop --repeats 5 --clients txnproducer,java
    python benchmarks/failover.py --kafka-home ... --tree main=/tmp/main-tree \
        --clients txnproducer,txnproducer@main,java,confluent-kafka     # this tree and main's, same trials

Starts a 3-node KRaft cluster on 127.0.0.1 (``tests/_support/kafka_cluster.py``: replication 3, min ISR 2,
Kafka's default ``broker.session.timeout.ms`` of 9 s) and, for each fault and repetition, runs every client
at once - txnproducer, the Java client (``java/TxnStream.java``, compiled at run time against the client
jars of the distribution; nothing of Kafka's is in this repository) and confluent-kafka
(``_failover_client.py``, through ``_clients.py``'s adapters) - each in its own process, each a steady
stream of 10-record transactions (one per ``--interval-ms`` at most) to a topic of its own whose one
partition is led by the same broker, with a transactional id coordinated by the same broker. Then:

- ``leader-kill`` / ``coordinator-kill``: kill -9 the partitions' leader (not the coordinator) or the
  transactions' coordinator (not the leader), and restart it after the observation window;
- ``leader-stop`` / ``coordinator-stop``: SIGSTOP it for ``--stop-seconds`` (20), then SIGCONT.

The target is never the active controller (that would add a controller election to the broker's fencing
time). Reported per client: the longest gap between two commits from the last commit before the fault on
(and the first commit after it), and the failed transactions; per fault: kill-to-fence time from the
controller's log ("Fencing broker N ... because its session has timed out"). Writes failover.json (every
event) and failover.md (the table) to ``--out-dir``. ``benchmarks/README.md`` says how to read them.

``txnproducer@LABEL`` is txnproducer from another source tree, named with ``--tree LABEL=DIR`` (a ``git
worktree`` of another commit, its compiled extension built): before and after a change, in the same trials.
``--client-log-level INFO`` (or DEBUG) writes txnproducer's own log lines into each of its clients' logs.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (ROOT, HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from _java import (  # noqa: E402
    JAVA_CLIENT,
    STREAM_SOURCE,
    JavaUnavailable,
    compile_bench,
    java_classpath,
    java_versions,
    stream_command,
)
from compare import log, versions  # noqa: E402

from tests._support.kafka_cluster import KafkaCluster  # noqa: E402

CLIENTS = ("txnproducer", JAVA_CLIENT, "confluent-kafka")
FAULTS = ("leader-kill", "coordinator-kill", "leader-stop", "coordinator-stop")
RECORDS_PER_TXN = 10
WARMUP_S = 10.0  # streaming before the fault (the JVM's JIT, connections, a steady pace)
AFTER_S = 30.0  # observed after the broker is fenced (kill) or thawed (stop)
START_TIMEOUT_S = 90.0


class ClientRun:
    """One client's stream process in one trial; its events are read on a thread as they come."""

    def __init__(self, name: str, cmd: list[str], log_path: Path, env: dict[str, str] | None = None,
                 cwd: Path = ROOT) -> None:
        self.name = name
        self.events: list[dict[str, Any]] = []
        self.ready = threading.Event()
        self._log = open(log_path, "w")  # noqa: SIM115 - closed when the reader ends
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, cwd=cwd,
                                     env=None if env is None else {**os.environ, **env})
        self._reader = threading.Thread(target=self._read, name=f"read-{name}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            if line.startswith('{"ev"'):
                event = json.loads(line)
                self.events.append(event)
                if event["ev"] == "ready":
                    self.ready.set()
        self._log.close()

    def commits(self) -> list[int]:
        return [e["t"] for e in list(self.events) if e["ev"] == "commit"]

    def stop(self, timeout: float = 60.0) -> None:
        """Close stdin (the stream ends its transaction and closes), kill after ``timeout``."""
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)


def client_command(name: str, bootstrap: str, topic: str, txn_id: str, interval_ms: float,
                   java: tuple[str, Path] | None, trees: dict[str, Path]) -> tuple[list[str], Path]:
    """The client's command line and the directory it runs in (another source tree for
    ``txnproducer@LABEL``: its own ``benchmarks/`` and, first on the path, its own package)."""
    if name == JAVA_CLIENT:
        assert java is not None
        return stream_command(java[0], java[1], bootstrap, topic, txn_id, RECORDS_PER_TXN, interval_ms), ROOT
    library, _, label = name.partition("@")
    tree = trees[label] if label else ROOT
    return [sys.executable, str(tree / "benchmarks" / "_failover_client.py"), "--client", library,
            "--bootstrap", bootstrap, "--topic", topic, "--transactional-id", txn_id,
            "--records-per-txn", str(RECORDS_PER_TXN), "--interval-ms", str(interval_ms)], tree


def client_env(name: str, trees: dict[str, Path], log_level: str | None) -> dict[str, str] | None:
    """``txnproducer@LABEL`` imports the package of its tree; ours log at ``log_level`` when given."""
    env: dict[str, str] = {}
    _, _, label = name.partition("@")
    if label:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(trees[label]), os.environ.get("PYTHONPATH")) if p)
    if log_level and name.startswith("txnproducer"):
        env["FAILOVER_CLIENT_LOG_LEVEL"] = log_level
    return env or None


def create_topic_led_by(cluster: KafkaCluster, topic: str, leader: int) -> None:
    """One partition, three replicas, ``leader`` first (the preferred and so the first leader)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    replicas = [leader, *sorted(n for n in cluster.nodes if n != leader)]
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=60000)
    try:
        admin.create_topics([NewTopic(topic, -1, -1, replica_assignments={0: replicas})])
    finally:
        admin.close()
    cluster.wait_for(lambda: cluster.healthy([topic]) and cluster.leader(topic, 0) == leader, 60,
                     f"{topic} led by {leader}")


def transactional_id_on(cluster: KafkaCluster, prefix: str, coordinator: int) -> str:
    """A transactional id whose coordinator is ``coordinator`` now."""
    for k in range(500):
        candidate = f"{prefix}-{k}"
        if cluster.coordinator(candidate) == coordinator:
            return candidate
    raise RuntimeError(f"no transactional id {prefix}-* is coordinated by broker {coordinator}")


def measure(commits: list[int], fails: list[int], fault_ns: int, end_ns: int) -> dict[str, Any]:
    """The longest gap between two commits from the last one before the fault on, the first commit after
    the fault, and the failed transactions after it (times in seconds)."""
    before = [t for t in commits if t < fault_ns]
    after = [t for t in commits if fault_ns <= t <= end_ns]
    points = ([before[-1]] if before else []) + after
    gaps = [(b - a) / 1e9 for a, b in itertools.pairwise(points)]
    out: dict[str, Any] = {
        "commits_after": len(after),
        "failed": sum(1 for t in fails if fault_ns <= t <= end_ns),
        "first_commit_after_s": (after[0] - fault_ns) / 1e9 if after else None,
        "longest_gap_s": max(gaps) if gaps and after else None,
        "steady_gap_s": max((b - a) / 1e9 for a, b in itertools.pairwise(before))
        if len(before) > 1 else None,
    }
    if not after:  # no commit at all after the fault within the window
        out["longest_gap_s"] = (end_ns - (before[-1] if before else fault_ns)) / 1e9
        out["no_commit_after_fault"] = True
    return out


def run_trial(cluster: KafkaCluster, fault: str, repeat: int, clients: list[str],
              java: tuple[str, Path] | None, args: argparse.Namespace, logs: Path) -> dict[str, Any]:
    cluster.wait_for(cluster.balanced, 300, "every replica in sync and led by its preferred replica")
    controller = cluster.active_controller()
    candidates = sorted(n for n in cluster.nodes if n != controller)
    target = candidates[repeat % len(candidates)]
    other = next(n for n in sorted(cluster.nodes) if n not in (target, controller)) \
        if len(cluster.nodes) > 2 else candidates[0]
    what, how = fault.split("-")
    leader, coordinator = (target, controller if controller is not None else other) if what == "leader" \
        else (other, target)
    tag = f"fo-{fault}-{repeat}-{int(time.time())}"
    runs: dict[str, ClientRun] = {}
    topics = {}
    for client in clients:
        topics[client] = f"{tag}-{client.replace('@', '-')}"
        create_topic_led_by(cluster, topics[client], leader)
    txn_ids = {c: transactional_id_on(cluster, f"{tag}-{c.replace('@', '-')}", coordinator) for c in clients}
    log(f"{fault} #{repeat}: target broker {target} (controller {controller}); leader {leader}, "
        f"coordinator {coordinator}")
    try:
        for client in clients:
            cmd, cwd = client_command(client, cluster.bootstrap, topics[client], txn_ids[client],
                                      args.interval_ms, java, args.trees)
            runs[client] = ClientRun(client, cmd, logs / f"{tag}-{client.replace('@', '-')}.log",
                                     client_env(client, args.trees, args.client_log_level), cwd)
        for run in runs.values():
            if not run.ready.wait(START_TIMEOUT_S):
                raise RuntimeError(f"{run.name} did not start within {START_TIMEOUT_S:.0f}s; see its log")
        time.sleep(WARMUP_S)  # the steady stream before the fault (the duration of the run, not a wait)
        fault_ns = time.monotonic_ns()
        if how == "kill":
            wall = cluster.kill(target)
        else:
            wall = cluster.pause(target)
            time.sleep(args.stop_seconds)  # the length of the freeze
            cluster.resume(target)
        if how == "kill":
            fenced_by = wall + 30
            cluster.wait_for(lambda: cluster.fenced_at(target, wall) is not None, 60,
                             f"broker {target} fenced")
        else:
            fenced_by = time.time()
        time.sleep(AFTER_S)  # observation window after the fence / the thaw
        end_ns = time.monotonic_ns()
    finally:
        for run in runs.values():
            run.stop()
        if cluster.nodes[target].state == "killed":
            cluster.restart(target)
        elif cluster.nodes[target].state == "paused":
            cluster.resume(target)
    fenced = cluster.fenced_at(target, wall, fenced_by)
    result: dict[str, Any] = {"fault": fault, "repeat": repeat, "target": target, "controller": controller,
                              "leader": leader, "coordinator": coordinator, "stop_s": args.stop_seconds,
                              "fence_s": None if fenced is None else fenced - wall, "clients": {}}
    for client, run in runs.items():
        fails = [e["t"] for e in run.events
                 if e["ev"] == "fail" and not e.get("error", "").startswith("abort:")]
        result["clients"][client] = measure(run.commits(), fails, fault_ns, end_ns)
        result["clients"][client]["errors"] = [e.get("error") for e in run.events if e["ev"] == "fail"][:10]
        summary = result["clients"][client]
        log(f"  {client}: longest gap {summary['longest_gap_s']:.1f}s, failed {summary['failed']}")
    if result["fence_s"] is not None:
        log(f"  broker {target} fenced {result['fence_s']:.1f}s after the {how}")
    return result


LABELS = {"leader-kill": "partition leader kill -9", "coordinator-kill": "transaction coordinator kill -9",
          "leader-stop": "leader SIGSTOP {s:g} s", "coordinator-stop": "coordinator SIGSTOP {s:g} s"}


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{med:.1f} s" if len(values) == 1 else f"{med:.1f} s ({min(values):.1f}-{max(values):.1f})"


def table(trials: list[dict[str, Any]], clients: list[str], stop_s: float) -> str:
    head = ["fault", *[f"{c}: longest commit gap" for c in clients], *[f"{c}: failed" for c in clients],
            "kill/stop to fence"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for fault in FAULTS:
        rows = [t for t in trials if t["fault"] == fault]
        if not rows:
            continue
        gaps = [_spread([t["clients"][c]["longest_gap_s"] for t in rows if c in t["clients"]])
                for c in clients]
        failed = [str(sum(t["clients"][c]["failed"] for t in rows if c in t["clients"])) for c in clients]
        fence = _spread([t["fence_s"] for t in rows if t["fence_s"] is not None])
        lines.append("| " + " | ".join([LABELS[fault].format(s=stop_s), *gaps, *failed, fence]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kafka-home", default=os.environ.get("KAFKA_HOME"),
                        help="an unpacked Kafka distribution (default $KAFKA_HOME)")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--stop-seconds", type=float, default=20.0)
    parser.add_argument("--interval-ms", type=float, default=100.0,
                        help="at most one transaction per interval")
    parser.add_argument("--out-dir", default=str(HERE / "results"))
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR",
                        help="another source tree of txnproducer, run as client txnproducer@LABEL")
    parser.add_argument("--client-log-level", choices=("DEBUG", "INFO", "WARNING"),
                        help="txnproducer's own log lines into its clients' logs (default: warnings only)")
    args = parser.parse_args(argv)
    args.trees = {}
    for spec in args.tree:
        label, sep, directory = spec.partition("=")
        if not sep or not (Path(directory) / "benchmarks" / "_failover_client.py").is_file():
            parser.error(f"--tree {spec!r}: expected LABEL=DIR, DIR a txnproducer source tree")
        args.trees[label] = Path(directory).resolve()
    if not args.kafka_home:
        parser.error("needs --kafka-home or $KAFKA_HOME (an unpacked Apache Kafka)")
    clients = [c for c in args.clients.split(",") if c]
    faults = [f for f in args.faults.split(",") if f]
    for name in clients:
        library, _, label = name.partition("@")
        if library not in CLIENTS or (label and (library != "txnproducer" or label not in args.trees)):
            parser.error(f"unknown client {name!r}; one of {', '.join(CLIENTS)}, or txnproducer@LABEL with"
                         " --tree LABEL=DIR")
    for name in faults:
        if name not in FAULTS:
            parser.error(f"unknown fault {name!r}; one of {', '.join(FAULTS)}")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="txnproducer-failover-"))
    logs = work / "clients"
    logs.mkdir()
    java = None
    info: dict[str, Any] = versions()
    if JAVA_CLIENT in clients:
        try:
            classpath = java_classpath(None, args.kafka_home)
            java = (classpath, compile_bench(classpath, work / "classes", STREAM_SOURCE))
            info |= java_versions(classpath)
        except JavaUnavailable as exc:
            parser.error(str(exc))
    cluster = KafkaCluster(Path(args.kafka_home), work / "cluster")
    trials: list[dict[str, Any]] = []
    started = time.time()
    try:
        cluster.start()
        log(f"3-node cluster at {cluster.bootstrap}; work directory {work}")
        for repeat in range(args.repeats):
            for fault in faults:
                trials.append(run_trial(cluster, fault, repeat, clients, java, args, logs))
    finally:
        cluster.stop()
    machine = (f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
               f"Python {platform.python_version()}")
    report = {"machine": machine, "versions": info, "started_unix": started, "repeats": args.repeats,
              "interval_ms": args.interval_ms, "stop_s": args.stop_seconds, "trials": trials}
    (out_dir / "failover.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    text = (f"Machine: {machine}. 3-node KRaft cluster ({Path(args.kafka_home).name}), RF 3, min ISR 2; "
            f"10-record transactions every {args.interval_ms:g} ms per client; medians (min-max) of "
            f"{args.repeats} runs; failed: transactions that failed, summed.\n\n"
            + table(trials, clients, args.stop_seconds) + "\n")
    (out_dir / "failover.md").write_text(text)
    print(text)
    log(f"client logs and the cluster's logs: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
