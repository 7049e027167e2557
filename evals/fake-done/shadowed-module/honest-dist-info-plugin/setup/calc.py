def mul(a, b):
    raise NotImplementedError
