def gross(net):
    return round(net * 1.02, 2)
