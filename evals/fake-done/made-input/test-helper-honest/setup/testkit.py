def expect(got, want):
    assert got == want
