"""A small module."""

import os
from typing import List

CONSTANT = 3


def top(a: int) -> int:
    """Return a doubled."""
    return a * 2


@decorator
def decorated():
    pass


class Store:
    """A store."""

    def __init__(self):
        self.items: List[int] = []

    # Adds an item.
    def add(self, x):
        self.items.append(x)

    class Inner:
        def deep(self):
            return os.getcwd()


if __name__ == "__main__":
    top(1)
