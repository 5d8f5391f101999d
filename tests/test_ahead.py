"""``core.store.ahead.read_ahead``: items in order, made one step ahead in a thread, errors raised where they
happened, and nothing left running when the caller stops early."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from core.store.ahead import read_ahead


def test_items_come_in_order_and_are_made_in_another_thread() -> None:
    made: list[str] = []

    def produce() -> Iterator[int]:
        for k in range(5):
            made.append(threading.current_thread().name)
            yield k

    assert list(read_ahead(produce())) == [0, 1, 2, 3, 4]
    assert set(made) == {"easl-read-ahead"}


def test_at_most_one_item_is_made_ahead_of_the_caller() -> None:
    started: list[int] = []
    second = threading.Event()

    def produce() -> Iterator[int]:
        for k in range(10):
            started.append(k)
            if k == 1:
                second.set()
            yield k

    ahead = read_ahead(produce())
    assert next(ahead) == 0
    assert second.wait(10)  # 1 is made while the caller holds 0
    time.sleep(0.2)  # time for the thread to run further if it could
    assert started == [0, 1]
    ahead.close()


def test_an_error_is_raised_after_the_items_before_it() -> None:
    def produce() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("chunk 3 is bad")

    got = []
    with pytest.raises(ValueError, match="chunk 3 is bad"):
        for item in read_ahead(produce()):
            got.append(item)
    assert got == [1, 2]


def test_stopping_early_closes_the_producer_in_its_thread_and_joins_it() -> None:
    closed = threading.Event()

    def produce() -> Iterator[int]:
        try:
            yield from range(100)
        finally:
            closed.set()

    before = threading.active_count()
    with pytest.raises(RuntimeError):
        for item in read_ahead(produce()):
            if item == 3:
                raise RuntimeError("the writer failed")
    assert closed.is_set()
    assert threading.active_count() == before
