"""asyncio: :class:`AsyncTransactionalProducer`, the transactional producer for event-loop services.

What the room holds: the async facade (``producer``), whose transaction a task holds and who
waits for it (``turns``), N producers for concurrent transactions (``pool``), the awaitable
delivery of one record (``record_future``), the KIP-447 group metadata of an aiokafka consumer
(``group_metadata``), how a coroutine waits for the Sender thread without blocking its loop
(``_waiting``), and the sync producer's core with its waits split into steps that do not wait
(``_loop_core``, the only module here that touches the producer's parts).

What it may import: the public producer API (``txnproducer.producer``, ``pool``, ``config``,
``errors``), the core's completion hooks (``_internal.listeners``, ``_internal.txn.result``,
``_internal.batching.batch``), its states (``_internal.txn.state``) and ``_internal.log``.
aiokafka is never imported: its consumer is duck-typed.
"""

from txnproducer.aio.group_metadata import aiokafka_group_metadata
from txnproducer.aio.pool import AsyncTransactionalProducerPool
from txnproducer.aio.producer import AsyncTransactionalProducer
from txnproducer.aio.record_future import AsyncRecordFuture

__all__ = ["AsyncRecordFuture", "AsyncTransactionalProducer", "AsyncTransactionalProducerPool",
           "aiokafka_group_metadata"]
