"""What the benchmarks time with."""

from __future__ import annotations

import time


class Timer:
    """Wall and CPU seconds of a block (CPU: the whole process, every thread)."""

    def __enter__(self):
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0
