"""In-process Kafka mock cluster for tests: real TCP brokers with transactions and fault injection.

See :class:`MockCluster`. ``RequestLogEntry`` is what ``MockCluster.request_log`` holds.
"""

from .cluster import MockCluster
from .request_log import RequestLogEntry

__all__ = ["MockCluster", "RequestLogEntry"]
