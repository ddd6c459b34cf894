"""First come, first served: the decoder's turns, and each waiting run's place in line.

One decoder process serves every visitor, one run at a time. A plain lock hands itself to whichever
waiter wakes first, so a visitor who has waited a minute can lose the turn to one who just came, and
it cannot tell anyone how many runs are ahead. `Turns` is a ticket lock: a run takes a ticket, and its
turn comes when every ticket taken before it has left the line, done or given up.
"""

from __future__ import annotations

import itertools
import threading


class Turns:
    """The line of tickets; the first one holds the turn. `with turns:` waits for a turn and leaves after."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._numbers = itertools.count()
        self._line: list[int] = []
        self._mine = threading.local()   # the ticket whose turn came in this thread

    def take(self) -> int:
        """A ticket at the end of the line."""
        with self._changed:
            ticket = next(self._numbers)
            self._line.append(ticket)
            return ticket

    def ahead(self, ticket: int) -> int:
        """How many tickets are before this one: the run holding the turn and those waiting before it."""
        with self._changed:
            return self._line.index(ticket)

    def wait(self, ticket: int, timeout: float | None = None) -> bool:
        """Whether the ticket's turn has come, waiting for it up to `timeout` seconds (None: as long as it takes)."""
        with self._changed:
            came = self._changed.wait_for(lambda: self._line[0] == ticket, timeout)
        if came:
            self._mine.ticket = ticket
        return came

    def leave(self, ticket: int) -> None:
        """The ticket leaves the line: its run is done, or it gave up waiting. The next one's turn may come."""
        with self._changed:
            self._line.remove(ticket)
            self._changed.notify_all()
        if getattr(self._mine, "ticket", None) == ticket:
            del self._mine.ticket

    def __len__(self) -> int:
        """How many tickets are in line, the one holding the turn included."""
        with self._changed:
            return len(self._line)

    def held(self) -> bool:
        """Whether this thread holds the turn: its ticket's wait came true, and it has not left the line."""
        ticket = getattr(self._mine, "ticket", None)
        with self._changed:
            return ticket is not None and bool(self._line) and self._line[0] == ticket

    def __enter__(self) -> int:
        ticket = self.take()
        try:
            self.wait(ticket)
        except BaseException:
            self.leave(ticket)
            raise
        return ticket

    def __exit__(self, *exc) -> None:
        self.leave(self._mine.ticket)
