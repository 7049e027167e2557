from decimal import Decimal


def gross(net):
    return float(round(Decimal(str(net)) * Decimal("1.20"), 2))
