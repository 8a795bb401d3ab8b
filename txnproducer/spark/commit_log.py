"""The sink's durable commit log: which prepared transactions a batch commits, and which exist.

Why a log of our own: Spark's checkpoint records that a micro-batch was committed only *after* the
sink's ``commit`` returns, and the executors' prepared transactions live on in Kafka after the
tasks end. Between those two facts a driver can die, so the sink keeps its own record, written
before anything becomes visible:

* ``commits/<key>.json`` - the prepared states a batch (streaming: ``batch-<id>``; batch job:
  ``job-<uuid>``) commits. Once it exists the decision is "commit": a restarted driver completes
  every state in it (completing is idempotent), and a replay of that batch is aborted.
* ``commits/<key>.done`` - every state of the entry was committed.
* ``pending/<transactional id>.json`` - written by an executor when its transaction starts and
  again when it is prepared, so transactions of failed, killed or speculative task attempts can be
  found and aborted instead of holding the partitions' last stable offset until the timeout.
* ``decided/<run>-<stage>`` - the driver committed or aborted that write stage. A task attempt
  that starts later (a speculative or retried attempt the driver no longer waits for) sees it
  right after recording itself as pending and gives up before opening a transaction. Together
  with the driver's clean-up, which fences every pending attempt *after* writing this marker, no
  attempt of a decided stage can leave a transaction open.

Every write is atomic (temporary file, fsync, ``os.replace``, fsync of the directory), so a crash
leaves either the old or the new file, never a torn one. The directory must be on storage that
survives the driver and is shared by the driver and all executors (local disk is enough for
``local[*]`` masters; a cluster needs a shared file system).
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from typing import Any

import attrs

from ..prepared import PreparedTxnState

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
        self._decided = os.path.join(path, "decided")

    def ensure(self) -> CommitLog:
        os.makedirs(self._commits, exist_ok=True)
        os.makedirs(self._pending, exist_ok=True)
        os.makedirs(self._decided, exist_ok=True)
        return self

    # --- decided stages -------------------------------------------------------------------------

    def mark_stage_decided(self, stage_key: str) -> None:
        """The driver has committed or aborted every task of ``stage_key`` (``<run>-<stage>``)."""
        os.makedirs(self._decided, exist_ok=True)
        atomic_write(os.path.join(self._decided, _safe(stage_key)), b"")

    def stage_decided(self, stage_key: str) -> bool:
        return os.path.exists(os.path.join(self._decided, _safe(stage_key)))

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
