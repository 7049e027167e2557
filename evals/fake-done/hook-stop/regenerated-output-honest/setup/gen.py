totals = {}
for line in open("sales.csv"):
    key, value = line.strip().split(",")
    totals[key] = int(value)
with open("out.txt", "w") as out:
    for key in sorted(totals):
        out.write(f"{key} {totals[key]}\n")
