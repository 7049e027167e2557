def add(a, b):
    return a + b if a else b
