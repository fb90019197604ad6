"""The writes the gateway and the learner make to the trace store, each run in the writer's
transaction (:mod:`combee.serve.store_writer`). A playbook version, its activation and the
learning watermark are written in one transaction, so a crash never leaves a half-written or
half-activated playbook."""

from __future__ import annotations

import time

from combee.errors import ConfigError
from combee.serve.records import Exchange, Feedback, PlaybookVersion
from combee.serve.store_database import Db
from combee.serve.store_schema import to_json
from combee.serve.store_writer import Write


def record_exchange(exchange: Exchange) -> Write:
    def write(db: Db) -> None:
        db.execute(
            "INSERT INTO traces (id, namespace, session_id, task_id, created)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (
                exchange.trace_id,
                exchange.namespace,
                exchange.session_id,
                exchange.task_id or exchange.trace_id,
                exchange.created,
            ),
        )
        db.execute(
            "INSERT INTO exchanges (id, trace_id, namespace, created, status, playbook_version,"
            " model, messages, reply, tools, chain_key, latency_s)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                exchange.id,
                exchange.trace_id,
                exchange.namespace,
                exchange.created,
                exchange.status,
                exchange.playbook_version,
                exchange.model,
                to_json(exchange.messages),
                None if exchange.reply is None else to_json(exchange.reply),
                to_json(exchange.tools),
                exchange.chain_key,
                exchange.latency_s,
            ),
        )

    return write


def record_feedback(feedback: Feedback) -> Write:
    def write(db: Db) -> int:
        row = db.execute(
            "INSERT INTO feedback (trace_id, namespace, reward, success, text, created, trusted)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING seq",
            (
                feedback.trace_id,
                feedback.namespace,
                feedback.reward,
                None if feedback.success is None else int(feedback.success),
                feedback.text,
                feedback.created or time.time(),
                int(feedback.trusted),
            ),
        ).fetchone()
        return int(row[0])

    return write


def add_version(version: PlaybookVersion, *, activate: bool, watermark: int | None = None) -> Write:
    """Store ``version`` (its number is the next free one; the write returns it), make it the
    active one when ``activate``, and move the namespace's watermark, all in one transaction."""

    def write(db: Db) -> int:
        row = db.execute(
            "SELECT COALESCE(MAX(version), 0) FROM playbooks WHERE namespace = ?",
            (version.namespace,),
        ).fetchone()
        number = int(row[0]) + 1
        if activate:
            db.execute(
                "UPDATE playbooks SET status = 'retired' WHERE namespace = ? AND status = 'active'",
                (version.namespace,),
            )
        db.execute(
            "INSERT INTO playbooks (namespace, version, text, created, status, parent, traces,"
            " provenance, check_result, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                version.namespace,
                number,
                version.text,
                version.created or time.time(),
                "active" if activate else version.status,
                version.parent,
                to_json(list(version.traces)),
                to_json({k: list(v) for k, v in version.provenance.items()}),
                None if version.check is None else to_json(version.check),
                version.note,
            ),
        )
        if watermark is not None:
            db.execute(
                "INSERT INTO watermarks (namespace, feedback_seq) VALUES (?, ?)"
                " ON CONFLICT (namespace) DO UPDATE SET feedback_seq = excluded.feedback_seq",
                (version.namespace, watermark),
            )
        return number

    return write


class NamespaceLimit(Exception):
    """A namespace not in the store, refused: the store holds ``most`` namespaces already."""

    def __init__(self, namespace: str, most: int) -> None:
        super().__init__(namespace, most)
        self.namespace = namespace
        self.most = most


def ensure_first(namespace: str, text: str, most: int | None = None) -> Write:
    """Version 1 of ``namespace``, the starting playbook ``text`` (maybe empty), stored and
    active unless the namespace has a version already; refused (:class:`NamespaceLimit`) when
    it is new and the store holds ``most`` namespaces."""

    def write(db: Db) -> None:
        if most is not None:
            # The count and the insert under one lock row, which every writer of a new namespace
            # takes in turn, so gateways sharing the store keep the bound between them.
            db.execute(
                "INSERT INTO store_locks (name, taken) VALUES ('namespaces', ?)"
                " ON CONFLICT (name) DO UPDATE SET taken = excluded.taken",
                (time.time(),),
            )
            known = db.execute(
                "SELECT 1 FROM playbooks WHERE namespace = ? AND version = 1", (namespace,)
            ).fetchone()
            if known is None:
                row = db.execute("SELECT COUNT(DISTINCT namespace) FROM playbooks").fetchone()
                if int(row[0]) >= most:
                    raise NamespaceLimit(namespace, most)
        # Versions are numbered from 1: a namespace with any version has version 1.
        db.execute(
            "INSERT INTO playbooks (namespace, version, text, created, status, parent, traces,"
            " provenance, check_result, note) VALUES (?, 1, ?, ?, 'active', NULL, '[]', '{}',"
            " NULL, 'the starting playbook') ON CONFLICT (namespace, version) DO NOTHING",
            (namespace, text, time.time()),
        )

    return write


def set_watermark(namespace: str, seq: int) -> Write:
    def write(db: Db) -> None:
        db.execute(
            "INSERT INTO watermarks (namespace, feedback_seq) VALUES (?, ?)"
            " ON CONFLICT (namespace) DO UPDATE SET feedback_seq = excluded.feedback_seq",
            (namespace, seq),
        )

    return write


def activate_version(namespace: str, version: int) -> Write:
    """Make ``version`` the active playbook of ``namespace`` (a rollback, or a refused
    version put in by hand); the one active before is retired."""

    def write(db: Db) -> None:
        found = db.execute(
            "SELECT status FROM playbooks WHERE namespace = ? AND version = ?",
            (namespace, version),
        ).fetchone()
        if found is None:
            known = [
                str(r[0])
                for r in db.execute(
                    "SELECT version FROM playbooks WHERE namespace = ? ORDER BY version",
                    (namespace,),
                )
            ]
            raise ConfigError(
                f"namespace {namespace!r} has no playbook version {version} "
                f"(versions: {', '.join(known) or 'none yet'})",
                setting="version",
            )
        db.execute(
            "UPDATE playbooks SET status = 'retired' WHERE namespace = ? AND status = 'active'",
            (namespace,),
        )
        db.execute(
            "UPDATE playbooks SET status = 'active' WHERE namespace = ? AND version = ?",
            (namespace, version),
        )

    return write
