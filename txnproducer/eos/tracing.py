"""TransactionalProcessor's spans: each input's processing continues the input's trace, each transaction
links to the inputs it consumed.

An input record written by a traced producer carries its context (``traceparent``). When the processor
is traced (``tracer_provider=``, or :func:`txnproducer.otel.instrument`):

* each input is transformed in a ``process {topic}`` span (CONSUMER kind) whose parent is the input's
  context - the input's trace goes on - and which links to the transaction's span;
* the outputs of that input are sent in that span's context, so their ``traceparent`` continues the
  input's trace too: a consumer of the outputs sees one trace from the first producer to itself;
* the transaction's span (the producer's) gets a link to every input it consumed (the SDK keeps 128
  links per span by default: ``OTEL_SPAN_LINK_COUNT_LIMIT``) and ``txnproducer.input_record_count``;
* with ``transform_batch`` the inputs of a poll are transformed together: one ``process {topic}``
  span, a child of the transaction, linked to each input; the outputs continue the transaction's trace.

Why the outputs keep their input's context although the processor sends them after transforming the
whole poll: :meth:`ProcessorTracing.transform` returns, with each output, the context manager that
makes that context current around its send (:mod:`txnproducer.eos.transform`). A transform that raises
leaves its span ERROR with the exception's type only: its message may quote the record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind

from ..otel import names, transaction_span
from ..otel.propagation import extract_context, span_context_of
from ..otel.spans import current_span

__all__ = ["ProcessorTracing"]


class _Current:
    """Makes ``context`` current inside ``with`` (reusable: one per input, for each of its outputs)."""

    __slots__ = ("_context", "_tokens")

    def __init__(self, context: Context) -> None:
        self._context = context
        self._tokens: list[Any] = []

    def __enter__(self) -> None:
        self._tokens.append(otel_context.attach(self._context))

    def __exit__(self, *exc: object) -> None:
        otel_context.detach(self._tokens.pop())


class ProcessorTracing:
    """The processor's tracer and what it does with it (module docstring)."""

    def __init__(self, tracer: Any, group_id: str) -> None:
        self._tracer = tracer
        self._group_id = group_id

    def _attributes(self, topic: str | None) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            names.MESSAGING_SYSTEM: names.MESSAGING_SYSTEM_KAFKA,
            names.MESSAGING_OPERATION_NAME: names.OPERATION_PROCESS,
            names.MESSAGING_OPERATION_TYPE: names.OPERATION_PROCESS,
            names.MESSAGING_CONSUMER_GROUP_NAME: self._group_id,
        }
        if topic is not None:
            attributes[names.MESSAGING_DESTINATION_NAME] = topic
        return attributes

    def transform(self, producer: Any, records: Sequence[Any], consumed: int,
                  transform: Callable[[Any], Iterable[Any]] | None,
                  transform_batch: Callable[[list[Any]], Iterable[Any]] | None
                  ) -> tuple[list[Any], list[Any]]:
        """The outputs of ``records``, each with the context manager to send it in (module docstring);
        the open transaction's span is linked to each input (``consumed``: its inputs so far)."""
        txn = transaction_span(producer)
        inputs = [span_context_of(r) for r in records]
        if txn is not None:
            for record, found in zip(records, inputs, strict=True):
                if found is not None:
                    txn.add_link(found, {names.MESSAGING_DESTINATION_NAME: record.topic,
                                         names.MESSAGING_DESTINATION_PARTITION_ID: str(record.partition),
                                         names.MESSAGING_KAFKA_OFFSET: int(record.offset)})
            txn.set_attribute(names.INPUT_RECORD_COUNT, consumed)
        if transform_batch is not None:
            topics = sorted({r.topic for r in records})
            topic = topics[0] if len(topics) == 1 else None
            parent = otel_context.get_current() if txn is None else trace.set_span_in_context(txn)
            attributes = {**self._attributes(topic), names.MESSAGING_BATCH_MESSAGE_COUNT: len(records)}
            links = [Link(c) for c in inputs if c is not None]
            with current_span(self._tracer, names.process_span_name(topic or "records"), context=parent,
                              kind=SpanKind.CONSUMER, attributes=attributes, links=links):
                produced = list(transform_batch(list(records)))
                current = _Current(otel_context.get_current())
            return produced, [current] * len(produced)
        assert transform is not None
        to_transaction = [] if txn is None else [Link(txn.get_span_context())]
        outputs: list[Any] = []
        contexts: list[Any] = []
        for record in records:
            attributes = self._attributes(record.topic)
            attributes[names.MESSAGING_DESTINATION_PARTITION_ID] = str(record.partition)
            attributes[names.MESSAGING_KAFKA_OFFSET] = int(record.offset)
            with current_span(
                    self._tracer, names.process_span_name(record.topic),
                    context=extract_context(record, Context()), kind=SpanKind.CONSUMER, attributes=attributes,
                    links=to_transaction):
                produced = list(transform(record))
                current = _Current(otel_context.get_current())
            outputs.extend(produced)
            contexts.extend([current] * len(produced))
        return outputs, contexts
