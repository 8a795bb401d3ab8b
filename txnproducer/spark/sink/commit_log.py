"""The commit log of earlier versions of the sink (the ``commit.log`` option), read to migrate.

Before the sink kept its state in Kafka (:mod:`txnproducer.spark.sink.state_topic`), it kept it in a
directory shared by the driver and the executors:

* ``commits/<key>.json`` - the prepared states a batch (``batch-<id>``, or ``job-<uuid>``) commits,
  and ``commits/<key>.done`` once all were committed;
* ``pending/<transactional id>.json`` - transactions executors started or prepared;
* ``decided/<run>-<stage>`` - stages the driver had decided.

A query upgraded with its ``commit.log`` option still set has that directory finished once by
:func:`txnproducer.spark.sink.legacy.finish_legacy_log`: recorded commits completed, pending
transactions fenced, and the newest committed micro-batch carried over to the state topic so that
Spark's replay of it is not written twice. Nothing writes new entries; the writing methods remain
for the migration tests. Every write is atomic (temporary file, fsync, ``os.replace``, fsync of the
directory).
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from typing import Any

import attrs

from ...prepared import PreparedTxnState

__all__ = ["CommitEntry", "CommitLog", "PendingTxn", "atomic_write"]


def atomic_write(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content."""
    directory = os.path.dirname(path) or "."
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@attrs.frozen
class CommitEntry:
    """A batch's commit decision: the prepared states to commit, and whether that finished."""

    key: str
    states: tuple[PreparedTxnState, ...]
    done: bool


@attrs.frozen
class PendingTxn:
    """A transaction an executor started (``state`` None) or prepared."""

    transactional_id: str
    state: PreparedTxnState | None


class CommitLog:
    """The files described in the module docstring, under ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._commits = os.path.join(path, "commits")
        self._pending = os.path.join(path, "pending")

    def ensure(self) -> CommitLog:
        os.makedirs(self._commits, exist_ok=True)
        os.makedirs(self._pending, exist_ok=True)
        return self

    # --- commit entries -------------------------------------------------------------------------

    def entry(self, key: str) -> CommitEntry | None:
        path = os.path.join(self._commits, f"{key}.json")
        try:
            with open(path, "rb") as f:
                data: dict[str, Any] = json.loads(f.read())
        except FileNotFoundError:
            return None
        states = tuple(PreparedTxnState.from_json(json.dumps(s)) for s in data["states"])
        done = os.path.exists(os.path.join(self._commits, f"{key}.done"))
        return CommitEntry(key, states, done)

    def record_commit(self, key: str, states: list[PreparedTxnState]) -> None:
        """The commit point: after this returns, the batch *will* be committed (by a restart if
        need be)."""
        body = {"key": key, "states": [json.loads(s.to_json()) for s in states]}
        atomic_write(os.path.join(self._commits, f"{key}.json"), json.dumps(body, indent=1).encode())

    def mark_done(self, key: str) -> None:
        atomic_write(os.path.join(self._commits, f"{key}.done"), b"")

    def committed_batches(self) -> list[int]:
        """Ids of the micro-batches with a commit entry (``batch-<id>``), ascending."""
        try:
            names = os.listdir(self._commits)
        except FileNotFoundError:
            return []
        return sorted(int(n[len("batch-"):-len(".json")]) for n in names
                      if n.startswith("batch-") and n.endswith(".json") and n[6:-5].isdigit())

    def undone(self) -> list[CommitEntry]:
        """Entries whose commit was decided but not seen to finish (a driver died), oldest first."""
        try:
            names = sorted(os.listdir(self._commits))
        except FileNotFoundError:
            return []
        out: list[CommitEntry] = []
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                entry = self.entry(name[: -len(".json")])
                if entry is not None and not entry.done:
                    out.append(entry)
        return out

    # --- pending transactions -------------------------------------------------------------------

    def record_pending(self, transactional_id: str, state: PreparedTxnState | None) -> None:
        body = {"transactional_id": transactional_id,
                "state": None if state is None else json.loads(state.to_json())}
        atomic_write(self._pending_path(transactional_id), json.dumps(body).encode())

    def pending(self) -> list[PendingTxn]:
        try:
            names = sorted(os.listdir(self._pending))
        except FileNotFoundError:
            return []
        out: list[PendingTxn] = []
        for name in names:
            if not name.endswith(".json") or name.startswith("."):
                continue
            try:
                with open(os.path.join(self._pending, name), "rb") as f:
                    data = json.loads(f.read())
            except FileNotFoundError:
                continue  # removed concurrently
            state = data.get("state")
            out.append(PendingTxn(
                str(data["transactional_id"]),
                None if state is None else PreparedTxnState.from_json(json.dumps(state)),
            ))
        return out

    def remove_pending(self, transactional_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._pending_path(transactional_id))

    def _pending_path(self, transactional_id: str) -> str:
        return os.path.join(self._pending, f"{_safe(transactional_id)}.json")


def _safe(name: str) -> str:
    """``name`` as a file name (transactional ids may hold any character)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
