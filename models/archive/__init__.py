"""Archive items: the owner's rows, upload rules, and the worker's verification and sweeping bookkeeping."""
