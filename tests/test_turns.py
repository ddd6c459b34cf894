"""The decoder's turns: first come, first served, each waiting run told its place, and no ticket left behind."""

from __future__ import annotations

import threading

import pytest

from specviz.turns import Turns


def test_turns_come_in_the_order_the_tickets_were_taken():
    line = Turns()
    first, second, third = line.take(), line.take(), line.take()
    assert [line.ahead(t) for t in (first, second, third)] == [0, 1, 2]
    assert line.wait(first, timeout=0) and not line.wait(second, timeout=0) and not line.wait(third, timeout=0)
    line.leave(first)
    assert line.wait(second, timeout=0) and not line.wait(third, timeout=0)   # the third waits behind the second
    assert line.ahead(third) == 1


def test_a_ticket_given_up_lets_the_ones_behind_it_move_up():
    line = Turns()
    running, gave_up, waiting = line.take(), line.take(), line.take()
    line.leave(gave_up)   # its visitor closed the tab while waiting
    assert line.ahead(waiting) == 1
    line.leave(running)
    assert line.wait(waiting, timeout=0) and len(line) == 1


def test_a_waiter_wakes_when_its_turn_comes_not_before():
    line = Turns()
    running = line.take()
    started, served = threading.Event(), []

    def visitor() -> None:
        ticket = line.take()
        started.set()
        line.wait(ticket)
        served.append(len(line))
        line.leave(ticket)

    thread = threading.Thread(target=visitor)
    thread.start()
    started.wait()
    assert not served and len(line) == 2
    line.leave(running)
    thread.join()
    assert served == [1] and len(line) == 0


def test_with_waits_for_a_turn_and_an_interrupted_wait_leaves_the_line():
    line = Turns()
    with line:
        assert len(line) == 1 and line.held()
    assert len(line) == 0 and not line.held()

    class Interrupted(Exception):
        pass

    running = line.take()

    def interrupt(ticket: int, timeout: float | None = None) -> bool:
        raise Interrupted   # a rerun or a stop reaching a thread while it waits

    line.wait = interrupt
    with pytest.raises(Interrupted), line:
        pass
    assert len(line) == 1 and line.ahead(running) == 0


def test_only_the_thread_whose_turn_came_holds_it():
    line = Turns()
    first, second = line.take(), line.take()
    assert not line.held()   # tickets in line, but no wait of this thread came true yet
    assert line.wait(first, timeout=0) and line.held()
    elsewhere = []
    other = threading.Thread(target=lambda: elsewhere.append(line.held()))
    other.start()
    other.join()
    assert elsewhere == [False]   # another visitor's thread, while this one runs
    line.leave(first)
    assert not line.held()
    assert line.wait(second, timeout=0) and line.held()
