"""Counts the SQL statements a bench process sends (bench/ab.py `--count-queries`): put this
folder on PYTHONPATH and set BENCH_COUNT_QUERIES to a path; SIGUSR1 writes the count so far to
`<path>.<pid>`. Works on any tree (it wraps aiopg's public `Cursor.execute`), so a tree from
before a change is counted the same way as the tree after it. Never on a production path."""

import os

if os.environ.get("BENCH_COUNT_QUERIES"):
    import signal
    from typing import Any

    import aiopg

    _count = 0
    _execute = aiopg.Cursor.execute

    async def _counted(self: Any, operation: Any, parameters: Any = None, *args: Any, **kwargs: Any) -> Any:
        global _count
        _count += 1
        return await _execute(self, operation, parameters, *args, **kwargs)

    def _dump(*_: object) -> None:
        path = f"{os.environ['BENCH_COUNT_QUERIES']}.{os.getpid()}"
        with open(path, "w") as out:
            out.write(str(_count))

    aiopg.Cursor.execute = _counted  # type: ignore[method-assign]
    signal.signal(signal.SIGUSR1, _dump)
