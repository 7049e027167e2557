def double(x):
    """
    >>> double(3)
    6
    """
    return x + 2
