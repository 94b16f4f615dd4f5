"""The job store: define, steer and read jobs (DBMS_JOB's SUBMIT, CHANGE, BROKEN, RUN ...).

Every method is one short transaction. Writes lock the job's row first
(``SELECT ... FOR UPDATE`` on MySQL/MariaDB, ``BEGIN IMMEDIATE`` on SQLite),
compute the new state with ``jobtui.core.transitions`` and write it back, so
operator actions from many processes and runner bookkeeping never interleave
half-way. Runners use the same tables (``jobtui.core.runner``).

``JobStore`` (``jobstore``) offers the verbs and the reads; the work behind them
lives in modules named after it, each handed the store's ``StoreContext``
(``context``: engine, backend, clock, the account's view), never the JobStore:
``reading`` (jobs, runs, runners), ``validation`` (what a job runs), ``defining``
(submit, change, remove), ``steering`` (what each operator verb writes, pure),
``expressions`` (expr evaluation, preview), ``transfer`` (export, import) and
``importfile`` (reading an import file within bounds), ``pruning`` (the run log
down to a ``Retention``). The defining verbs take request objects
(``jobtui.core.jobdefs``: ``JobSpec``, ``JobChange``; ``jobtui.core.retention``:
``Retention``). Whatever differs between databases is asked of the backend
(``jobtui.core.backends``).

This package's interface is ``JobStore``, ``open_store`` and ``RunnerInfo``.
"""

from jobtui.core.store.jobstore import JobStore, open_store
from jobtui.core.store.reading import RunnerInfo

__all__ = ["JobStore", "RunnerInfo", "open_store"]
