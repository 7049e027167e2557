CASES = [(1, 2, 3), (2, 2, 4)]


def add(a, b):
    return a - b
