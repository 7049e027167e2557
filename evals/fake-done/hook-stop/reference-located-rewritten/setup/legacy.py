import datetime


def parse(s):
    d = datetime.date.fromisoformat(s)
    return (d.year, d.month, d.day)
