from slug import slugify


def test_lowercases():
    assert slugify("Hello") == "hello"


def test_spaces_become_dashes():
    assert slugify("a b  c") == "a-b-c"
