"""librdkafka's (confluent-kafka's) setting names that are not ours, and what to write instead
(producer and consumer settings: one table, as librdkafka has one namespace).

Why a table: a confluent-kafka user's first line is ``Producer({"bootstrap.servers": ...,
"transactional.id": ..., "queue.buffering.max.ms": 5, "sasl.username": ...})``. Keys spelled as
the Java client spells them (``bootstrap.servers``, ``transactional.id``, ``linger.ms``, ``acks``,
``compression.type``, ``sasl.mechanism``, ...) mean the same in both clients and are simply
accepted. The keys below are librdkafka's own spellings (``queue.buffering.max.ms`` is its name for
``linger.ms``) or librdkafka-only settings; accepting a second spelling of a setting would let one
configuration hold both with different values, so each is refused with the setting that does the
job here, and every such key of a mapping is named in one error: a migrated configuration is fixed
in one edit. Values are never echoed (``sasl.password`` is a secret).

Surveyed from librdkafka's CONFIGURATION.md (the global and topic properties marked ``*``, ``P``
or ``C``); keys a producer or consumer rarely sets are left to the "unknown configuration key ... did
you mean" message.

May import: nothing of txnproducer (a leaf).
"""

from __future__ import annotations

__all__ = ["LIBRDKAFKA_PARTITIONERS", "librdkafka_advice"]

_OAUTH = ("sasl_oauth_token_provider=txnproducer.oauth.ClientCredentialsTokenProvider("
          "token_endpoint_url=..., client_id=..., client_secret=..., scope=...)")
_KERBEROS = ("GSSAPI reads the ticket cache: run kinit (with the keytab) before the producer starts; "
             "sasl_kerberos_service_name names the brokers' service")
_DELIVERY = ("per record: send(...) returns a RecordFuture; future.add_callback(fn) calls fn(metadata, "
             "exception) - Java's order, not confluent's (err, msg) - or call future.get(timeout)")
_LOGGING = ("txnproducer logs through structlog (or the stdlib logger 'txnproducer' when structlog is not "
            "configured): logging.getLogger('txnproducer').setLevel(logging.DEBUG)")
_METRICS = "producer.metrics() returns the Java client's transaction metrics and counters at any time"
_NOT_NEEDED = "not needed: the client negotiates versions and sockets itself"

#: librdkafka key -> (the Java/ProducerConfig key that does the job or None, a note for the user)
_TABLE: dict[str, tuple[str | None, str]] = {
    # --- the same setting under another name --------------------------------------------------
    "metadata.broker.list": ("bootstrap.servers", ""),
    "queue.buffering.max.ms": ("linger.ms", ""),
    "message.timeout.ms": ("delivery.timeout.ms", ""),
    "message.send.max.retries": ("retries", ""),
    "request.required.acks": ("acks", "transactions need 'all' (-1)"),
    "compression.codec": ("compression.type", ""),
    "compression.level": ("compression.gzip.level", "for gzip only, 1-9"),
    "max.in.flight": ("max.in.flight.requests.per.connection", "1 to 5 with transactions"),
    "message.max.bytes": ("max.request.size", ""),
    "queue.buffering.max.kbytes": ("buffer.memory", "in bytes here: kbytes * 1024"),
    "socket.timeout.ms": ("request.timeout.ms", ""),
    "topic.metadata.refresh.interval.ms": ("metadata.max.age.ms", ""),
    "sasl.mechanisms": ("sasl.mechanism", ""),
    "sasl.username": ("sasl.plain.username", "PLAIN and SCRAM"),
    "sasl.password": ("sasl.plain.password", "PLAIN and SCRAM"),
    "ssl.ca.location": ("ssl.cafile", "a PEM file; for a directory of CAs build an ssl_context"),
    "ssl.certificate.location": ("ssl.certfile", "PEM"),
    "ssl.key.location": ("ssl.keyfile", "PEM"),
    "ssl.crl.location": ("ssl.crlfile", "PEM"),
    "oauth_cb": ("sasl_oauth_token_provider", "a callable returning a txnproducer.oauth.OAuthBearerToken"),
    # --- librdkafka-only settings -------------------------------------------------------------------
    "queue.buffering.max.messages": (None, "there is no count limit: buffer.memory bounds the bytes waiting"),
    "batch.num.messages": (None, "batches are bounded in bytes: batch.size"),
    "sticky.partitioning.linger.ms": (None, "keyless records stick to a partition until batch.size "
                                            "bytes went to it (KIP-794), not for a time"),
    "enable.gapless.guarantee": (None, "transactions already guarantee it: a failed batch makes the "
                                       "transaction abort"),
    "queue.buffering.backpressure.threshold": (None, "not needed"),
    "delivery.report.only.error": (None, _DELIVERY),
    "on_delivery": (None, _DELIVERY),
    "dr_cb": (None, _DELIVERY),
    "dr_msg_cb": (None, _DELIVERY),
    "error_cb": (None, "errors are raised by the calls and set on the records' futures; there is no global "
                       "error callback"),
    "throttle_cb": (None, "throttling is handled (and waited out) by the client"),
    "stats_cb": (None, _METRICS),
    "statistics.interval.ms": (None, _METRICS),
    "logger": (None, _LOGGING),
    "debug": (None, _LOGGING),
    "log_level": (None, _LOGGING),
    "log.connection.close": (None, _LOGGING),
    "ssl.ca.pem": (None, "write the PEM to a file for ssl_cafile, or pass an ssl_context "
                         "(ssl.create_default_context(cadata=...))"),
    "ssl.certificate.pem": (None, "write the PEM to a file for ssl_certfile, or pass an ssl_context"),
    "ssl.key.pem": (None, "write the PEM to a file for ssl_keyfile, or pass an ssl_context"),
    "enable.ssl.certificate.verification": (None, "pass an ssl_context whose verify_mode you chose "
                                                  "(turning verification off is not recommended)"),
    "sasl.oauthbearer.method": (None, _OAUTH),
    "sasl.oauthbearer.client.id": (None, _OAUTH),
    "sasl.oauthbearer.client.secret": (None, _OAUTH),
    "sasl.oauthbearer.scope": (None, _OAUTH),
    "sasl.oauthbearer.extensions": (None, _OAUTH),
    "sasl.oauthbearer.config": (None, _OAUTH),
    "enable.sasl.oauthbearer.unsecure.jwt": (None, _OAUTH),
    "sasl.kerberos.principal": (None, _KERBEROS),
    "sasl.kerberos.keytab": (None, _KERBEROS),
    "sasl.kerberos.kinit.cmd": (None, _KERBEROS),
    "sasl.kerberos.min.time.before.relogin": (None, _KERBEROS),
    "api.version.request": (None, _NOT_NEEDED),
    "api.version.request.timeout.ms": (None, _NOT_NEEDED),
    "broker.version.fallback": (None, _NOT_NEEDED),
    "socket.keepalive.enable": (None, _NOT_NEEDED),
    "socket.nagle.disable": (None, _NOT_NEEDED),
    "socket.max.fails": (None, _NOT_NEEDED),
    "broker.address.family": (None, _NOT_NEEDED),
    "message.copy.max.bytes": (None, _NOT_NEEDED),
    "receive.message.max.bytes": (None, _NOT_NEEDED),
    # --- the consumer's: the same setting under another name (fetch.wait.max.ms and
    # fetch.message.max.bytes are accepted as aliases: ConsumerConfig) -----------------------------
    "fetch.error.backoff.ms": ("retry.backoff.ms", ""),
    # --- the consumer's librdkafka-only settings ------------------------------------------------------
    "enable.partition.eof": (None, "poll() returns nothing when a partition is caught up; no event is "
                                   "made of it"),
    "queued.min.messages": (None, "prefetching is bounded in bytes: fetch.max.bytes and "
                                  "max.partition.fetch.bytes"),
    "queued.max.messages.kbytes": (None, "prefetching is bounded in bytes: fetch.max.bytes and "
                                         "max.partition.fetch.bytes"),
    "enable.auto.offset.store": (None, "offsets are committed with the transaction "
                                       "(producer.send_offsets_to_transaction(...)), never stored aside"),
    "offset_commit_cb": (None, "offsets are committed with the transaction: its commit_transaction() "
                               "returns or raises"),
    "on_commit": (None, "offsets are committed with the transaction: its commit_transaction() returns or "
                        "raises"),
    "rebalance_cb": (None, "pass a rebalance listener to subscribe(topics, listener=...): "
                           "on_partitions_revoked / on_partitions_assigned / on_partitions_lost, as Java's "
                           "ConsumerRebalanceListener"),
    "consume.callback.max.messages": (None, "poll(timeout, max_records) returns at most max_records "
                                            "(max.poll.records by default)"),
    "coordinator.query.interval.ms": (None, _NOT_NEEDED),
}

#: librdkafka's named partitioners (its ``partitioner`` setting takes a name, ours a callable)
LIBRDKAFKA_PARTITIONERS = frozenset({"random", "consistent", "consistent_random", "murmur2", "murmur2_random",
                                     "fnv1a", "fnv1a_random"})


def librdkafka_advice(key: str, known: dict[str, str]) -> str | None:
    """What to write instead of librdkafka's ``key`` (None: not one of its names we refuse).

    ``known`` maps every spelling the settings class accepts to its Python name: a replacement
    the class does not have (a consumer is asked about a producer setting) is not offered.
    """
    entry = _TABLE.get(key)
    if entry is None:
        return None
    replacement, note = entry
    if replacement is not None and replacement in known:
        python = known[replacement]
        spelled = repr(replacement) if python == replacement else f"{replacement!r} ({python})"
        text = f"{key!r} -> {spelled}"
        return f"{text}, {note}" if note else text
    if replacement is not None:
        return f"{key!r} has no equivalent in this client"
    return f"{key!r} has no equivalent here: {note}"
