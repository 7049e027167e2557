def parse(s):
    y, m, d = s.split("-")
    return (int(y), int(d), int(m))
