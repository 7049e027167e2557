from slug import slugify


def test_lower():
    assert slugify("Hello World") == "hello-world"
