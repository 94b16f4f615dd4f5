"""The runner wing: pools of worker threads that claim, execute and record due jobs.

``pool.RunnerPool`` runs the threads and loops; ``config.PoolConfig`` holds its
settings and their defaults. The package imports nothing on purpose: each module
is imported by its own name, so a light one (``config``, ``queries``) never pulls
in the pool. docs/architecture.md maps the modules; docs/runners.md tells the
protocol.
"""
