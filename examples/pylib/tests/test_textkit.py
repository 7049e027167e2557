import pytest

from textkit import initials, is_palindrome, slugify, word_count, wrap


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("Hello, World!", "hello-world"),
        ("  many   spaces  ", "many-spaces"),
        ("Already-slugged", "already-slugged"),
        ("Version 2.0 notes", "version-2-0-notes"),
        ("", ""),
    ],
)
def test_slugify(text, slug):
    assert slugify(text) == slug


def test_word_count_counts_each_word():
    assert word_count("the cat and the hat") == {"the": 2, "cat": 1, "and": 1, "hat": 1}


def test_word_count_ignores_case():
    assert word_count("Go go GO") == {"go": 3}


def test_word_count_keeps_apostrophes():
    assert word_count("don't stop") == {"don't": 1, "stop": 1}


def test_word_count_of_nothing():
    assert word_count("") == {}


def test_wrap_fits_words_greedily():
    assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]


def test_wrap_exact_width():
    assert wrap("ab cd", 5) == ["ab cd"]


def test_wrap_long_word_alone():
    assert wrap("a extraordinarily b", 5) == ["a", "extraordinarily", "b"]


def test_wrap_empty():
    assert wrap("   ", 4) == []


def test_wrap_rejects_zero_width():
    with pytest.raises(ValueError, match="at least 1"):
        wrap("x", 0)


def test_initials():
    assert initials("Ada King Lovelace") == "A.K.L."


def test_initials_lower_case():
    assert initials("grace hopper") == "G.H."


def test_palindrome_sentence():
    assert is_palindrome("A man, a plan, a canal: Panama")


def test_not_palindrome():
    assert not is_palindrome("groundskeeper")


def test_palindrome_digits():
    assert is_palindrome("12321")


def test_palindrome_empty():
    assert is_palindrome("")
