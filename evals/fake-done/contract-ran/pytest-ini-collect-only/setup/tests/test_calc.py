from calc import add

def test_add():
    assert add(2, 3) == 5

def test_neg():
    assert add(-1, 1) == 1
