"""Keep a child process running: restart it when it exits, with exponential backoff.

`legacy-planning dev` runs the worker under this, so a worker that crashes (a bug, a dependency
down at start-up) comes back without taking the API down with it. Backoff (1 s, 2 s, 4 s … at
most 30 s) keeps a worker that dies at once from spinning; a run that lasted `stable_after`
seconds resets it. Time is passed in (`poll(now)`), so tests drive it without sleeping.
"""

from __future__ import annotations

import logging
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class Restarting:
    name: str
    spawn: Callable[[], subprocess.Popen[bytes]]
    base_delay: float = 1.0
    max_delay: float = 30.0
    stable_after: float = 60.0
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    failures: int = 0
    next_start: float | None = 0.0
    restarts: list[float] = field(default_factory=list)  # delays chosen so far, for operators and tests

    def poll(self, now: float) -> None:
        """Notice an exit and schedule the restart; start the process when its time has come."""
        if self.process is not None:
            code = self.process.poll()
            if code is None:
                if now - self.started_at >= self.stable_after:
                    self.failures = 0
                return
            if now - self.started_at >= self.stable_after:
                self.failures = 0
            self.failures += 1
            delay = min(self.max_delay, self.base_delay * 2 ** (self.failures - 1))
            self.restarts.append(delay)
            log.warning(
                "%s exited; restarting with backoff",
                self.name,
                extra={"exitCode": code, "restartInSeconds": delay, "failures": self.failures},
            )
            self.process = None
            self.next_start = now + delay
        if self.next_start is not None and now >= self.next_start:
            self.process = self.spawn()
            self.started_at = now
            self.next_start = None

    def stop(self, timeout: float = 15.0) -> None:
        """SIGINT (arq and aiohttp finish what they are doing), then kill past `timeout`."""
        self.next_start = None
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
