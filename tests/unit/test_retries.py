"""retries.retry_after: the one backoff of a worker's repeated provider questions."""
from datetime import timedelta

from app.payments.retries import retry_after


def test_the_wait_doubles_from_30_seconds_up_to_an_hour():
    assert [retry_after(n) for n in (1, 2, 3, 4)] == [timedelta(seconds=s) for s in (30, 60, 120, 240)]
    assert retry_after(8) == timedelta(hours=1)  # 30 s × 2^7 = 64 min, capped
    assert retry_after(50) == timedelta(hours=1)
    assert retry_after(0) == timedelta(seconds=30)  # no failure yet counted: the first wait
