"""``core.store.ahead.ReadAhead``: items in order, made one step ahead in a thread once the caller says so, errors
raised where they happened, and nothing left running when the caller stops early."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from easl_toolkit.core.store.observations import ReadAhead


def test_items_come_in_order_and_are_made_in_another_thread() -> None:
    made: list[str] = []

    def produce() -> Iterator[int]:
        for k in range(5):
            made.append(threading.current_thread().name)
            yield k

    with ReadAhead(produce()) as ahead:
        assert list(ahead) == [0, 1, 2, 3, 4]
    assert len(set(made)) == 1 and made[0].startswith("easl-read-ahead")


def test_the_next_item_is_made_only_after_go_on_and_never_more_than_one_ahead() -> None:
    started: list[int] = []
    second = threading.Event()

    def produce() -> Iterator[int]:
        for k in range(10):
            started.append(k)
            if k == 1:
                second.set()
            yield k

    with ReadAhead(produce()) as ahead:
        assert next(ahead) == 0
        time.sleep(0.2)
        assert started == [0]  # the caller holds 0 and has not said go on
        ahead.go_on()
        ahead.go_on()  # once per item: a second call changes nothing
        assert second.wait(10)
        time.sleep(0.2)  # time for the thread to run further if it could
        assert started == [0, 1]
        assert next(ahead) == 1  # taking the next item without go_on lets the thread go on
        assert next(ahead) == 2


def test_an_error_is_raised_after_the_items_before_it() -> None:
    def produce() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("chunk 3 is bad")

    got = []
    with ReadAhead(produce()) as ahead:
        with pytest.raises(ValueError, match="chunk 3 is bad"):
            for item in ahead:
                got.append(item)
        assert list(ahead) == []  # and it stays ended
    assert got == [1, 2]


def test_stopping_early_closes_the_producer_in_its_thread_and_joins_it() -> None:
    closed: list[str] = []

    def produce() -> Iterator[int]:
        try:
            yield from range(100)
        finally:
            closed.append(threading.current_thread().name)

    before = threading.active_count()
    with pytest.raises(RuntimeError), ReadAhead(produce()) as ahead:
        for item in ahead:
            ahead.go_on()
            if item == 3:
                raise RuntimeError("the writer failed")
    assert len(closed) == 1 and closed[0].startswith("easl-read-ahead")
    assert threading.active_count() == before
