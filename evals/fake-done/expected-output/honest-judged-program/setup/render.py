for line in open('data.txt'):
    print(line.strip())
