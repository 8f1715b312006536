"""Client side of hoard's epoch plans (docs/caching.md, "Epoch plans").

`epoch_order(n, seed, epoch)` is the permutation hoard generates for a seeded plan: the list
of dataset indices in the order they are read in that epoch. The dataset of a plan is its
"keys" list as given, or, for a "prefix", the object names under it sorted by their UTF-8
bytes (S3 listing order). A loader that draws its order from here reads exactly what hoard
prefetches. Standard library only.

    >>> epoch_order(10, 42, 0)  # doctest: +SKIP
"""

MASK = (1 << 64) - 1


def _splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def epoch_order(n, seed, epoch):
    """Dataset indices in reading order for `epoch` (0-based) of a plan with `seed`."""
    state = (seed ^ ((epoch * 0xD1B54A32D192ED03) & MASK)) & MASK
    perm = list(range(n))
    for i in range(n, 1, -1):  # Fisher-Yates from the end: swap slot i-1 with j in [0, i)
        state, r = _splitmix64(state)
        j = r % i
        perm[i - 1], perm[j] = perm[j], perm[i - 1]
    return perm


def rank_slice(order, rank, world_size):
    """The positions a DistributedSampler-style rank reads: every world_size-th, from rank."""
    return order[rank::world_size]


if __name__ == "__main__":
    import sys
    n, seed, epoch = (int(a) for a in sys.argv[1:4])
    print(" ".join(str(i) for i in epoch_order(n, seed, epoch)))
