"""The benchmarks' sample orders (scripts/bench/timing.py): in the orders one round of samples
walks, every implementation follows every other one equally often, so that none is always timed
right after the one that evicted (or warmed) its data."""
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from bench.timing import balanced_orders  # noqa: E402


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7])
def test_each_item_follows_every_other_equally_often(n):
    orders = balanced_orders(n)
    assert all(sorted(order) == list(range(n)) for order in orders)
    followers = Counter((a, b) for order in orders for a, b in zip(order, order[1:]))
    assert set(followers) == {(a, b) for a in range(n) for b in range(n) if a != b}
    assert len(set(followers.values())) <= 1
    # and each one comes first equally often (the previous sample's last item is not it)
    assert len(set(Counter(order[0] for order in orders).values())) == 1
