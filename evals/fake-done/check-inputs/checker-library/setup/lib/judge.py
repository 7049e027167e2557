def verdict():
    return open("out.txt").read().strip() == "42"
