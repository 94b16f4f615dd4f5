"""MySQL and MariaDB (and a MariaDB Galera cluster): everything jobtui says only to
them. backend.py (MySQLBackend), galera.py (GaleraBackend), batch.py (the runner's
hot path in raw SQL), events.py (the server's Event Scheduler), rights.py (an
account's grants), driver.py (PyMySQL's codec and session reset), routines.py (the
owners' DEFINER routines and the runner's check of them), grants.py (the roles'
GRANTs and the actions' allow-list), views.py (the operators' views),
owner_index.py (the owner's indexed user part and the SQL comparing an owner with the
invoker), lock_key.py (the key of the named locks' names). Only
``jobtui.core.backends`` imports this package; everything else asks the ``Backend``
contract."""
