"""``txnproducer transactions ...`` and ``txnproducer spark status``: the admin tools on the command line.

The commands and option names of Kafka's ``kafka-transactions.sh`` where it has them (``--bootstrap-server``,
``--command-config``, ``--transactional-id``, ``--topic``, ``--partition``, ``--broker-id``,
``--start-offset``, ``--producer-id``, ``--producer-epoch``, ``--coordinator-epoch``,
``--max-transaction-timeout`` in minutes, ``--duration-filter`` in ms, ``--transactional-id-pattern``),
plus ``--prefix`` (a pipeline's transactional ids), ``--state``, ``--json`` and, for ``abort``, ``--confirm``.
The connection options may come before or after the command.

Exit codes: 0 done; 1 an error, reported as one line on stderr (what happened, what to do, the ACL or
broker version needed); 2 a usage error (argparse); 3 ``abort`` without ``--confirm``: the plan was printed
and nothing was written. Library and kafka-python log lines stay off stderr unless ``-v``, so the error
line is the only one.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import attrs

from txnproducer.errors import ConfigError, TxnProducerError

from . import render
from .client import TransactionsAdmin
from .results import TopicPartition
from .settings import AdminSettings, load_command_config

#: a command reports an address nothing listens at after this long, not after default.api.timeout.ms
UNREACHABLE_AFTER_MS = 5000

__all__ = ["EXIT_ERROR", "EXIT_NOT_CONFIRMED", "spark_main", "transactions_main"]

EXIT_ERROR, EXIT_USAGE, EXIT_NOT_CONFIRMED = 1, 2, 3


def _connection_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """The options every command takes; ``default`` is SUPPRESS on the commands, so that a value given
    before the command is not reset by the command's parser."""
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        default=default,
        help="brokers to connect to, comma-separated (or bootstrap.servers in --command-config)",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        default=default,
        help="properties file of connection settings (security.protocol, ssl.*, sasl.*), as for"
        " kafka-transactions.sh",
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        metavar="MS",
        default=default,
        help="bound on the command's requests (default.api.timeout.ms; default 60000)",
    )
    parser.add_argument("--json", action="store_true", default=default, help="print JSON instead of a table")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="show the library's and kafka-python's log on stderr",
    )


def _parser(prog: str, description: str) -> tuple[argparse.ArgumentParser, Any]:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    _connection_options(parser, None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    return parser, sub


def _command(sub: Any, name: str, help_text: str) -> argparse.ArgumentParser:
    cmd: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text, description=help_text[0].upper() + help_text[1:]
    )
    _connection_options(cmd, argparse.SUPPRESS)
    return cmd


def _transactions_parser() -> argparse.ArgumentParser:
    parser, sub = _parser(
        "txnproducer transactions",
        "Inspect transactions, find hanging ones and end them (like kafka-transactions.sh).",
    )
    lst = _command(sub, "list", "list transactions (every broker's ListTransactions)")
    lst.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help="only transactions in this state (Ongoing, PrepareCommit, ...; repeatable)",
    )
    lst.add_argument(
        "--producer-id",
        action="append",
        type=int,
        default=[],
        metavar="ID",
        help="only transactions of this producer id (repeatable)",
    )
    lst.add_argument(
        "--duration-filter",
        type=int,
        metavar="MS",
        help="only transactions running longer than MS milliseconds (brokers 3.8+)",
    )
    lst.add_argument(
        "--transactional-id-pattern",
        metavar="REGEX",
        help="only transactional ids this regular expression matches in full (brokers 4.1+)",
    )
    lst.add_argument("--prefix", help="only the transactional ids of a pipeline: those starting with PREFIX")

    desc = _command(sub, "describe", "describe transactional ids as their coordinators see them")
    which = desc.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--transactional-id", action="append", metavar="ID", help="transactional id (repeatable)"
    )
    which.add_argument("--prefix", help="every transactional id starting with PREFIX (a pipeline's)")

    prod = _command(
        sub,
        "describe-producers",
        "describe a partition's active producers and what holds its last stable offset",
    )
    prod.add_argument("--topic", required=True, help="topic name")
    prod.add_argument(
        "--partition", type=int, help="partition number (default: every partition of the topic)"
    )
    prod.add_argument("--broker-id", type=int, help="ask this replica instead of the leader")

    hang = _command(sub, "find-hanging", "find open transactions their coordinator no longer tracks")
    hang.add_argument("--broker-id", type=int, help="search every partition with a replica on this broker")
    hang.add_argument("--topic", help="search this topic")
    hang.add_argument("--partition", type=int, help="search this partition (needs --topic)")
    hang.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=15,
        metavar="MINUTES",
        help="only transactions last written longer ago than this (the brokers'"
        " transaction.max.timeout.ms; default 15)",
    )

    abort = _command(
        sub,
        "abort",
        "abort a transaction: a live one through its coordinator (--transactional-id),"
        " a hanging one with a marker on its partition (--topic --partition ...)",
    )
    abort.add_argument(
        "--transactional-id",
        metavar="ID",
        help="fence this id: its coordinator aborts its open transaction on every partition",
    )
    abort.add_argument("--topic", help="topic of the hanging transaction")
    abort.add_argument("--partition", type=int, help="partition of the hanging transaction")
    abort.add_argument("--start-offset", type=int, help="first offset of the hanging transaction")
    abort.add_argument("--producer-id", type=int, help="producer id of the hanging transaction")
    abort.add_argument("--producer-epoch", type=int, help="producer epoch of the hanging transaction")
    abort.add_argument(
        "--coordinator-epoch",
        type=int,
        help="coordinator epoch for the marker (default: the one describe-producers shows)",
    )
    abort.add_argument(
        "--confirm",
        action="store_true",
        help="do it; without this, print what would be done and write nothing (exit code 3)",
    )
    return parser


def _spark_parser() -> argparse.ArgumentParser:
    parser, sub = _parser("txnproducer spark", "The PySpark exactly-once sink (txnkafka), seen from Kafka.")
    status = _command(
        sub,
        "status",
        "what a query's transactions are doing: prepared batches, the driver's"
        " last decision, which partitions they hold",
    )
    which = status.add_mutually_exclusive_group()
    which.add_argument("--prefix", help="the query's transactional.id.prefix option")
    which.add_argument(
        "--checkpoint-location",
        metavar="LOCATION",
        help="the query's checkpointLocation option, exactly as given (when it set no prefix)",
    )
    status.add_argument(
        "--checkpoint-dir",
        metavar="DIR",
        help="the query's checkpoint directory, readable here: its Kafka input's progress (the source's"
        " committed and planned offsets against the last stable offsets); alone, it also names the sink's"
        " query as --checkpoint-location DIR would",
    )
    status.add_argument("--state-topic", default="txnkafka-state", help="the query's state.topic option")
    return parser


def _admin(args: argparse.Namespace) -> TransactionsAdmin:
    settings: dict[str, Any] = {}
    if args.command_config:
        settings.update(load_command_config(args.command_config))
    if args.bootstrap_server:
        settings["bootstrap.servers"] = args.bootstrap_server
    if not any(k in settings for k in ("bootstrap.servers", "bootstrap_servers")):
        raise ConfigError("--bootstrap-server is required (or bootstrap.servers in --command-config)")
    if args.timeout_ms is not None:
        settings["default.api.timeout.ms"] = args.timeout_ms
    # a command says at once that nothing listens at the address, instead of after the whole timeout
    return TransactionsAdmin(attrs.evolve(AdminSettings.from_mapping(settings),
                                          unreachable_after_ms=UNREACHABLE_AFTER_MS))


def _run_transactions(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> int:
    as_json = args.json
    if args.command == "list":
        found = admin.list_transactions(
            states=args.state,
            producer_ids=args.producer_id,
            duration_ms=args.duration_filter,
            pattern=args.transactional_id_pattern,
            prefix=args.prefix,
        )
        print(render.as_json(found) if as_json else render.listing_table(found), file=out)
    elif args.command == "describe":
        if args.prefix is not None:
            _, descriptions = admin.describe_prefix(args.prefix)
        else:
            descriptions = list(admin.describe_transactions(args.transactional_id).values())
        print(render.as_json(descriptions) if as_json else render.description_table(descriptions), file=out)
    elif args.command == "describe-producers":
        if args.partition is not None:
            partitions = [TopicPartition(args.topic, args.partition)]
        else:
            partitions = _all_partitions(admin, args.topic)
        producers = admin.describe_producers(partitions, broker_id=args.broker_id)
        chosen = [producers[tp] for tp in sorted(producers)]
        print(
            render.as_json(chosen) if as_json else "\n\n".join(render.producers_table(f) for f in chosen),
            file=out,
        )
    elif args.command == "find-hanging":
        if args.max_transaction_timeout < 0:
            raise ConfigError(
                f"--max-transaction-timeout must be >= 0 minutes, got {args.max_transaction_timeout}"
            )
        hanging = admin.find_hanging(
            broker_id=args.broker_id,
            topic=args.topic,
            partition=args.partition,
            max_transaction_timeout_ms=args.max_transaction_timeout * 60_000,
        )
        print(render.as_json(hanging) if as_json else render.hanging_table(hanging), file=out)
    else:
        return _abort(admin, args, out)
    return 0


def _all_partitions(admin: TransactionsAdmin, topic: str) -> list[TopicPartition]:
    from .metadata import check_partitions, fetch_layout

    layout = fetch_layout(admin.connection, [topic], admin.connection.deadline())
    check_partitions(layout, [TopicPartition(topic, 0)])
    return [TopicPartition(topic, p) for p in sorted(layout.topics[topic].partitions)]


def _abort(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> int:
    plan = admin.plan_abort(
        transactional_id=args.transactional_id,
        topic=args.topic,
        partition=args.partition,
        start_offset=args.start_offset,
        producer_id=args.producer_id,
        producer_epoch=args.producer_epoch,
        coordinator_epoch=args.coordinator_epoch,
    )
    if not args.confirm:
        print(
            render.as_json({"plan": plan, "confirmed": False}) if args.json else render.plan_text(plan),
            file=out,
        )
        print(
            "txnproducer transactions: not aborted: add --confirm to do what the plan says", file=sys.stderr
        )
        return EXIT_NOT_CONFIRMED
    if not args.json:
        print(render.plan_text(plan), file=out, flush=True)
    result = admin.abort(plan)
    print(
        render.as_json({"plan": plan, "confirmed": True, "result": result})
        if args.json
        else render.abort_text(result),
        file=out,
    )
    return 0


def _run_spark(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> int:
    from txnproducer.spark.sink.options import default_prefix

    from .spark_source_view import spark_source_progress
    from .spark_view import spark_sink_status

    named = args.prefix or args.checkpoint_location
    if not named and not args.checkpoint_dir:
        raise ConfigError("give --prefix or --checkpoint-location (the sink's query), --checkpoint-dir (the"
                          " query's checkpoint), or both")
    location = args.checkpoint_location or args.checkpoint_dir
    prefix = args.prefix if args.prefix is not None else default_prefix(location)
    if args.checkpoint_dir is None:
        status = spark_sink_status(admin, prefix, args.state_topic)
        print(render.as_json(status) if args.json else render.spark_text(status), file=out)
        return 0
    progress = spark_source_progress(admin.connection, args.checkpoint_dir)
    try:
        sink = spark_sink_status(admin, prefix, args.state_topic)
    except ConfigError:
        if named:
            raise
        sink = None  # a query reading with the source may write elsewhere: its checkpoint names no sink
    if args.json:
        print(render.as_json({"source": progress, "sink": sink}), file=out)
    else:
        print(render.spark_source_text(progress), file=out)
        print(render.spark_text(sink) if sink else f"no txnkafka sink state for prefix {prefix!r}", file=out)
    return 0


@contextlib.contextmanager
def _logging(verbose: bool) -> Iterator[None]:
    """Only our one error line on stderr: the library's and kafka-python's loggers stay quiet unless
    ``-v`` (DEBUG to stderr). Their levels are put back afterwards: in-process callers keep theirs."""
    loggers = [logging.getLogger(name) for name in ("kafka", "txnproducer")]
    before = [logger.level for logger in loggers]
    if verbose:
        logging.basicConfig(stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for logger in loggers:
        logger.setLevel(logging.DEBUG if verbose else logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, before, strict=True):
            logger.setLevel(level)


def _main(parser: argparse.ArgumentParser, argv: Sequence[str] | None, run: Any, out: TextIO | None) -> int:
    args = parser.parse_args(list(argv) if argv is not None else None)
    stream = out if out is not None else sys.stdout
    with _logging(bool(args.verbose)):
        try:
            with _admin(args) as admin:
                code: int = run(admin, args, stream)
                return code
        except (TxnProducerError, OSError) as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            print(f"{parser.prog}: error: {message}", file=sys.stderr)
            return EXIT_ERROR


def transactions_main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """``txnproducer transactions ...``; returns the exit code (module docstring)."""
    return _main(_transactions_parser(), argv, _run_transactions, out)


def spark_main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """``txnproducer spark status ...``; returns the exit code (module docstring)."""
    return _main(_spark_parser(), argv, _run_spark, out)
