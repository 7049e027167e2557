def slugify(s):
    return s.replace(" ", "-")
