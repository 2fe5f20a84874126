"""Paired rounds: two servers measured back to back, round after round, and what their ratio is.

A round's ratio (one server's req/s over the other's in the same round) cancels what drifts
slowly on the machine; the median over rounds keeps one stalled round from moving the result;
the bootstrap interval says how far the median could be from the truth with that many rounds on
a machine this uneven, and so whether a bound is met, missed or not decided by the run.
"""
from __future__ import annotations

import random
import statistics

# Bootstrap resamples, and a fixed seed: the same rounds always give the same interval.
RESAMPLES = 5000
SEED = 32


def round_ratios(mine: list[float], theirs: list[float]) -> list[float]:
    """Each round's figure of `mine` over `theirs` in the same round."""
    return [a / b for a, b in zip(mine, theirs) if b]


def median_interval(ratios: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """A percentile bootstrap interval of the median of the rounds' ratios."""
    if len(ratios) < 2:
        only = ratios[0] if ratios else float("nan")
        return only, only
    draw = random.Random(SEED)
    medians = sorted(statistics.median(draw.choices(ratios, k=len(ratios))) for _ in range(RESAMPLES))
    tail = (1 - confidence) / 2
    return medians[int(tail * RESAMPLES)], medians[min(RESAMPLES - 1, int((1 - tail) * RESAMPLES))]


def verdict(interval: tuple[float, float], bound: float) -> str:
    """Whether "at least `bound`" holds: met (the whole interval at or above it), missed (the
    whole interval below it), or undecided (more rounds, or a quieter machine, are needed)."""
    low, high = interval
    if low >= bound:
        return "met"
    if high < bound:
        return "missed"
    return "undecided"


def summary(mine: list[float], theirs: list[float], bound: float) -> dict:
    """The rounds' ratios, their median, its 95% interval and the verdict against `bound`."""
    ratios = round_ratios(mine, theirs)
    low, high = median_interval(ratios)
    return {"round_ratios": [round(r, 3) for r in ratios],
            "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
            "median_interval": [round(low, 3), round(high, 3)],
            "verdict": verdict((low, high), bound)}
