"""Turns take the event loop one step per pass, in the order they asked (engine/fair.py)."""

from __future__ import annotations

import asyncio

from engine import fair


class Passes:
    """Counts the passes of the event loop (a callback that queues itself again runs once per pass)."""

    def __init__(self) -> None:
        self.count, self.stopped = 0, False
        self.loop = asyncio.get_running_loop()
        self.loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.count += 1
        if not self.stopped:
            self.loop.call_soon(self._tick)


async def turn(seen: list[int], i: int) -> None:
    """A turn's step: it asks, and notes when it went."""
    await fair.step()
    seen.append(i)


async def test_a_step_nobody_else_asks_for_goes_at_once():
    ran: list[int] = []
    asyncio.get_running_loop().call_soon(ran.append, 1)
    await fair.step()
    assert ran == []  # no pass of the loop went by


async def test_steps_asked_in_one_pass_go_one_per_pass_in_the_order_asked():
    passes = Passes()
    seen: list[tuple[int, int]] = []

    async def turn(i: int) -> None:
        await fair.step()
        seen.append((i, passes.count))

    await asyncio.gather(*(turn(i) for i in range(6)))  # all six ask in the same pass
    passes.stopped = True
    assert [i for i, _ in seen] == list(range(6))
    at = [p for _, p in seen]
    assert all(later > earlier for earlier, later in zip(at, at[1:]))  # never two in one pass


async def test_other_callbacks_run_between_the_steps():
    order: list[str] = []
    loop = asyncio.get_running_loop()

    async def turn(i: int) -> None:
        await fair.step()
        order.append(f"turn {i}")
        if i == 0:
            loop.call_soon(order.append, "timer")  # due in the next pass: before the second turn's step

    await asyncio.gather(*(turn(i) for i in range(3)))
    assert order == ["turn 0", "timer", "turn 1", "turn 2"]


async def test_a_waiter_cancelled_in_the_queue_does_not_hold_up_the_others():
    seen: list[int] = []
    tasks = [asyncio.create_task(turn(seen, i)) for i in range(4)]
    await asyncio.sleep(0)  # all four have asked; the first went
    tasks[1].cancel()
    await asyncio.gather(tasks[0], tasks[2], tasks[3])
    assert seen == [0, 2, 3] and tasks[1].cancelled()
    await fair.step()  # and the gate is free again


async def test_a_waiter_cancelled_just_as_it_was_let_through_does_not_stop_the_queue():
    seen: list[int] = []
    tasks = [asyncio.create_task(turn(seen, i)) for i in range(3)]
    await asyncio.sleep(0)  # the first went; the second and third wait
    second = fair._FAIR[asyncio.get_running_loop()].waiting[0]
    while not second.done():  # its turn has come; its task has yet to run
        await asyncio.sleep(0)
    tasks[1].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert seen == [0, 2] and tasks[1].cancelled()


def test_a_closed_event_loop_is_not_kept_alive_by_its_gate():
    import gc
    import weakref

    refs = []
    for _ in range(5):
        loop = asyncio.new_event_loop()
        loop.run_until_complete(fair.step())
        loop.close()
        refs.append(weakref.ref(loop))
        del loop
    gc.collect()
    assert not any(r() for r in refs)  # (other tests' loops may still be alive, with their gates)
