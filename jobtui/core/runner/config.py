"""A runner pool's settings (``PoolConfig``) and the pass's tuning constants.

``PoolConfig``'s defaults are the one place the pools' defaults are written: the
command line (``jobtui worker``'s options, the heartbeat age it calls dead) and the
console read them from ``DEFAULTS``. Nothing here imports the rest of the runner,
so reading a default costs no more than this module.
"""

from __future__ import annotations

from dataclasses import dataclass

ABORT_CHECK_INTERVAL = 0.3
BACKLOG_PER_THREAD = 4
MAX_BATCH = 256  # short jobs claimed and recorded together when many are due
BATCH_BUDGET = 0.25  # seconds: a batch's jobs run one after another; their last runs add up to this
MIN_PASS = 0.02  # seconds between two scheduler passes a worker asked for
BURST_WAIT = 0.2  # seconds: the longest a batch's recording waits for a slot's other batches
SHORT_RUN = 0.1  # seconds: a job whose last run took less may be batched
FRESH_GUESS = SHORT_RUN  # seconds a job never run yet counts for in a batch's budget
# seconds past its slot: while the first of its kind runs (a probe), the other new jobs of
# that kind (one owner's jobs with the same kind and target, never run yet) wait at most
# this long to learn whether they may be batched; then they are taken one at a time
PROBE_WAIT = 0.5
RECONNECT_CAP = 5.0
PRUNE_MAX_BATCHES = 20  # per housekeeping pass; the rest goes in the next one


@dataclass(frozen=True)
class PoolConfig:
    """What a ``RunnerPool`` is told to be, checked when made.

    ``threads``: worker threads; ``poll``: the longest sleep between passes;
    ``name``: the runner's name in the runner table (default ``runner``);
    ``heartbeat_timeout``: a runner silent this long is dead (and a lease's length);
    ``lead``: seconds before its slot a run is claimed; ``owner_share``: of the threads
    one owner's runs may hold at once (at least one); ``takeover_grace``: how overdue
    another pool's job is before this one takes it (sharing.py); ``job_id``: only this
    job; ``hold``: foreground mode (``jobtui run NAME``), the job held between runs.
    """

    threads: int = 4
    poll: float = 1.0
    name: str | None = None
    heartbeat_timeout: float = 15.0
    lead: float = 0.25
    owner_share: float = 0.5
    takeover_grace: float = 2.0
    job_id: int | None = None
    hold: bool = False

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ValueError("threads must be at least 1")
        if not 0 < self.owner_share <= 1:
            raise ValueError("owner_share must be a fraction above 0 and at most 1")
        if self.poll <= 0:
            raise ValueError("poll must be a positive number of seconds")
        if not 0 <= self.lead <= 5:
            raise ValueError("lead must be between 0 and 5 seconds")
        if not 0 <= self.takeover_grace <= 3600:
            raise ValueError("takeover_grace must be between 0 and 3600 seconds")


#: The defaults, for those who show or parse them (the command line, the console).
DEFAULTS = PoolConfig()
