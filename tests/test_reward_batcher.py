"""The reward server's batcher: every request is answered, however the requests fall around a
batch being scored."""

import asyncio
import threading
import time

from viz_app.reward.server import Batcher


class SlowScorer:
    """Scores a text by its length, taking a while, as a model does."""

    def score_texts(self, texts, prompts):
        time.sleep(0.2)
        return [float(len(t)) for t in texts]


def run_alone(coroutine):
    """Runs a coroutine on its own loop in its own thread: a browser test earlier in the same
    worker may have left this thread's loop running, and asyncio.run refuses to nest."""
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", asyncio.run(coroutine)))
    thread.start()
    thread.join(timeout=30)
    assert "value" in result, "the batcher did not answer within 30 s"
    return result["value"]


def test_a_request_arriving_while_a_batch_is_scored_is_answered():
    async def run():
        batcher = Batcher(SlowScorer(), wait=0.01, max_batch=64)
        first = asyncio.create_task(batcher.score(["a"], [""]))
        await asyncio.sleep(0.1)  # the first batch is being scored now
        second = await asyncio.wait_for(batcher.score(["bb"], [""]), timeout=5)
        return await first, second

    assert run_alone(run()) == ([1.0], [2.0])


def test_concurrent_requests_each_get_their_own_rewards():
    async def run():
        batcher = Batcher(SlowScorer(), wait=0.05, max_batch=64)
        return await asyncio.wait_for(asyncio.gather(
            *(batcher.score(["x" * n], [""]) for n in range(1, 9))), timeout=5)

    assert run_alone(run()) == [[float(n)] for n in range(1, 9)]
