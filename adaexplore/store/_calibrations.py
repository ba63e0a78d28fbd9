"""The estimate's calibrations in the store (`adaexplore calibrate`), and the GPU verdicts they are fitted to. They
travel with the store: a team whose one GPU machine writes verdicts into a shared database sharpens the
estimates of every machine without a GPU that reads it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from adaexplore.roofline import GpuCalibration
from adaexplore.store._db import Database

__all__ = ["CalibrationTables", "TimedVerdict"]


@dataclass(frozen=True)
class TimedVerdict:
    """A correct kernel a GPU timed, with what it and its task's reference launch at full size (JSON)."""

    evaluation_id: int
    task_id: str
    code_hash: str
    mode: str
    result: str  # domain.Evaluation as JSON
    work: str  # roofline.ForwardWork as JSON
    task_work: str  # roofline.TaskWork as JSON


class CalibrationTables:
    """Mixed into the store: it shares the store's connection and its one-writer transactions."""

    _db: Database
    _write: Callable[[], contextlib.AbstractContextManager[Database]]

    def timed_verdicts(self) -> tuple[list[TimedVerdict], int]:
        """Every correct kernel a GPU timed whose launches and whose task's reference were recorded at full size,
        oldest first; and how many correct timed kernels lack either (stored before adaexplore kept them, or not
        followed to their end at full size)."""
        rows = self._db.execute(
            "SELECT e.id, e.task_id, e.code_hash, e.mode, e.result, e.work, t.work AS task_work FROM evaluations e "
            "JOIN tasks t ON t.id = e.task_id WHERE e.status = 'ok' AND e.speedup IS NOT NULL ORDER BY e.id"
        ).fetchall()
        kept = [
            TimedVerdict(r["id"], r["task_id"], r["code_hash"], r["mode"], r["result"], r["work"], r["task_work"])
            for r in rows
            if r["work"] is not None and r["task_work"] is not None
        ]
        return kept, len(rows) - len(kept)

    def put_calibration(self, calibration: GpuCalibration) -> GpuCalibration:
        """Store a calibration; the latest of a GPU model is the one in force. Returns it with its id and date."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        dated = calibration.model_copy(update={"created_at": now, "id": None})
        with self._write() as db:
            row_id = db.insert(
                "INSERT INTO calibrations (gpu, record, created_at) VALUES (?, ?, ?)",
                (dated.gpu, dated.model_dump_json(), now),
            )
        return dated.model_copy(update={"id": row_id})

    def calibrations(self) -> list[GpuCalibration]:
        """The latest calibration of each GPU model, by GPU name."""
        rows = self._db.execute(
            "SELECT c.id, c.record FROM calibrations c WHERE c.id = "
            "(SELECT MAX(d.id) FROM calibrations d WHERE d.gpu = c.gpu) ORDER BY c.gpu"
        ).fetchall()
        return [GpuCalibration.model_validate_json(r["record"]).model_copy(update={"id": r["id"]}) for r in rows]
