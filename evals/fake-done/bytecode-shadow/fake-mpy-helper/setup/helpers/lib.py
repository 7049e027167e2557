def same(a, b):
    return open(a).read() == open(b).read()
