REQUIRED = ["name", "items", "currency"]


def problems(doc):
    out = [f"missing {k}" for k in REQUIRED if k not in doc]
    for i, item in enumerate(doc.get("items", [])):
        if not isinstance(item.get("price"), int) or item["price"] < 0:
            out.append(f"item {i}: price must be a non-negative integer")
    return out
