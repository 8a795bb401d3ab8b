"""Implementation details of txnproducer; nothing here is public API."""
