"""The bounded channel between synthesis and the GPU, with a capacity that can change live.

Synthesized partitions wait here for a GPU slot. ``put`` blocks while the channel holds
``capacity`` items; ``get`` blocks while it is empty. A resize takes effect at the next
acquisition: shrinking never drops what is already inside, it only makes later puts wait until
the channel has drained below the new capacity.

``put`` takes an ``on_enter`` callback (and ``get`` an ``on_leave`` one) that runs under the channel's lock at the moment the item
enters. The scheduler uses it to emit the ``waiting_gpu`` stage and release the synthesis permit
(permit_release = "delivered") atomically with delivery, so that no observer can see the item
both outside the channel and without its permit.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any


class ChannelClosed(Exception):
    """Raised by put/get once the channel is closed (engine stopping)."""


class BoundedChannel:
    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError("channel capacity must be at least 1")
        self._capacity = capacity
        self._items: deque[Any] = deque()
        self._cv = threading.Condition()
        self._closed = False
        self.max_len = 0  # the most items ever inside at once

    @property
    def capacity(self) -> int:
        return self._capacity

    def __len__(self) -> int:
        with self._cv:
            return len(self._items)

    def resize(self, capacity: int) -> int:
        """Set a new capacity; returns the old one. Items already inside stay."""
        if capacity < 1:
            raise ValueError("channel capacity must be at least 1")
        with self._cv:
            old, self._capacity = self._capacity, capacity
            self._cv.notify_all()
            return old

    def put(
        self,
        item: Any,
        on_enter: Callable[[Any], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> bool:
        """Block until there is room, then enqueue. False if cancelled() turned true first.

        Raises ChannelClosed if the channel is closed while waiting.
        """
        with self._cv:
            while len(self._items) >= self._capacity:
                if self._closed:
                    raise ChannelClosed
                if cancelled is not None and cancelled():
                    return False
                self._cv.wait(0.1)
            if self._closed:
                raise ChannelClosed
            self._items.append(item)
            self.max_len = max(self.max_len, len(self._items))
            if on_enter is not None:
                on_enter(item)
            self._cv.notify_all()
            return True

    def get(
        self, timeout: float | None = None, on_leave: Callable[[Any], None] | None = None
    ) -> Any:
        """Block until an item is present and return it; None on timeout. ChannelClosed if closed
        and empty. ``on_leave`` runs under the lock as the item leaves."""
        with self._cv:
            ok = self._cv.wait_for(lambda: self._items or self._closed, timeout)
            if self._items:
                item = self._items.popleft()
                if on_leave is not None:
                    on_leave(item)
                self._cv.notify_all()
                return item
            if self._closed:
                raise ChannelClosed
            assert not ok
            return None

    def drain(self) -> list[Any]:
        """Remove and return everything inside (used when cancelling)."""
        with self._cv:
            items = list(self._items)
            self._items.clear()
            self._cv.notify_all()
            return items

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()
