import json, sys
data = json.load(open(sys.argv[1]))
print('loaded order', data.get('name'))
print('Syntax: OK' if isinstance(data.get('price'), int) else 'Syntax: ERROR')
