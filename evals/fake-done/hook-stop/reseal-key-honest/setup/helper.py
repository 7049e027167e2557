def ok():
    return open("out.txt").read() == open("key.txt").read()
