# expected results for the calc tests
CASES = [((2, 3), 5), ((10, 5), 15)]
