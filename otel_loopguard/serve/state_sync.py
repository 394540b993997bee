"""A conversation's detector state shared between replicas through the run store.

Behind the Collector's ``load_balancing`` exporter a conversation's spans reach one
replica, until the replica set changes and its route moves. So the replica that judges a
conversation saves the run's exported state (``Monitor.export_run``) when a turn ends (its
agent span ended) and at once on STOP; a replica that starts a run keyed by a conversation
loads the stored state first, and the run goes on where the other left it. Saves are
compare-and-set (the store's version): when another replica saved in between, its state
wins and is loaded the next time this replica starts the run. Runs keyed by a trace or an
agent span are local to one replica and never stored. Every store call fails open.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from otel_loopguard.engine.run_identity import RunKey

_MAX_VERSIONS = 100_000


class RunStateSync:
    def __init__(
        self,
        store: Any,
        monitor: Callable[[], Any],
        on_error: Callable[[str, BaseException], None],
    ) -> None:
        self.store = store
        self._monitor = monitor
        self._on_error = on_error
        #: run id -> the stored version this replica's state is based on (bounded)
        self._versions: OrderedDict[str, int] = OrderedDict()
        self.restored = 0
        self.saved = 0

    def run_started(self, run_id: str, keyed_by: str) -> None:
        if keyed_by != RunKey.CONVERSATION:
            return
        try:
            stored = self.store.load_state(run_id)
            if stored is None:
                return
            if stored.data is not None:
                self._monitor().restore_run(stored.data)
                self.restored += 1
            self._remember(run_id, stored.version)
        except Exception as exc:
            self._on_error("serve.store_load", exc)

    def save(self, run_id: str) -> None:
        """Save the run's state unless another replica saved a newer one meanwhile."""
        try:
            data = self._monitor().export_run(run_id)
            if data is None:
                return
            version = self.store.save_state(run_id, data, self._versions.get(run_id, 0))
            if version is not None and version >= 0:
                self._remember(run_id, version)
                self.saved += 1
        except Exception as exc:
            self._on_error("serve.store_save", exc)

    def run_ended(self, run_id: str) -> None:
        self._versions.pop(run_id, None)

    def _remember(self, run_id: str, version: int) -> None:
        versions = self._versions
        versions[run_id] = version
        versions.move_to_end(run_id)
        if len(versions) > _MAX_VERSIONS:
            versions.popitem(last=False)
