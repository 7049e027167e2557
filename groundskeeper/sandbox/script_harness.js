// What script validation runs in QuickJS around a script, as a module: its bindings are
// invisible to the script, and its top-level await lets QuickJS run promise jobs.
//
// It first takes private copies of every built-in it uses (the script runs next and may
// replace any global or prototype method), hides the printer and locks
// Error.prepareStackTrace (whose call sites would hand out these functions), then puts a
// proxy under the global object: a name the script uses and nothing defines is a tool
// namespace, whose calls are recorded and throw. The script runs by indirect eval, as a
// classic script of its own (its line numbers are its own); a final expression appended to
// it yields its `workflow`. Then the jobs its top level left run (`promiseRounds`
// generations). What is read back is described field by field, each read guarded, and
// printed as one JSON line after a per-run nonce: the only line that can be printed, as the
// script has no printer (a runtime `import('qjs:std')` could print, but never the nonce,
// and never instead of this line). The rules are applied in Python to that description.
//
// groundskeeper.script_validation prepends the constants used here: source, nonce,
// absentNames, absentMessage, toolMessage, promiseRounds (JSON literals: the script's text
// stays inside its string).
const G = globalThis, print = G.print, keys = Object.keys, create = Object.create;
const isArray = Array.isArray, quote = JSON.stringify, define = Object.defineProperty;
const setProto = Object.setPrototypeOf, ProxyOf = Proxy;
const ErrorOf = Error, run = G.eval, ObjectProto = Object.prototype, get = Reflect.get;
define(ErrorOf, "prepareStackTrace", {value: undefined, writable: false, configurable: false});
const hidden = ["print", "console", "scriptArgs", "execArgv", "argv0", "gc", "navigator"];
for (let i = 0; i < hidden.length; i++) delete G[hidden[i]];
const quiet = function () {};
G.console = {log: quiet, info: quiet, warn: quiet, error: quiet, debug: quiet, trace: quiet};
const absent = create(null);
for (let i = 0; i < absentNames.length; i++) absent[absentNames[i]] = true;
const ReferenceErrorOf = ReferenceError;
const calls = create(null);
let callCount = 0;
const refuse = function (path) {
  const refused = new ErrorOf(toolMessage + " (" + path + ")");
  let stack = "";
  try { const s = refused.stack; if (typeof s === "string") stack = s; } catch (e) {}
  calls[callCount++] = '{"path":' + quote(path) + ',"stack":' + quote(stack) + "}";
  throw refused;
};
const tool = function (path) {
  return new ProxyOf(function () {}, {
    get: function (target, key) {
      if (typeof key === "symbol" || key === "then") return undefined;
      return tool(path + "." + key);
    },
    apply: function () { return refuse(path); },
    construct: function () { return refuse(path); },
  });
};
const namespaces = create(null);
// the names the script reached a namespace by while it loaded (no handler runs here): where
// it reads one at its top level, what it exports may depend on whether the name exists
const touched = [];
setProto(G, new ProxyOf(create(null), {
  get: function (target, key, receiver) {
    if (typeof key === "symbol" || key in ObjectProto) return get(ObjectProto, key, receiver);
    if (key === "workflow") return undefined;
    if (absent[key] === true) throw new ReferenceErrorOf(key + absentMessage);
    if (namespaces[key] === undefined) {
      namespaces[key] = tool(key);
      touched[touched.length] = key;
    }
    return namespaces[key];
  },
  has: function (target, key) {
    return typeof key === "string" && key !== "workflow" && absent[key] !== true;
  },
}));
const str = function (value) { return typeof value === "string" ? quote(value) : "null"; };
const kind = function (value) {
  if (value === null) return "null";
  if (typeof value === "object") {
    try { if (isArray(value)) return "array"; } catch (error) { return "object"; }
  }
  return typeof value;
};
let threw = "";
const read = function (object, key) {
  try { return {ok: true, value: object[key]}; } catch (error) {
    threw = describeError(error);
    return {ok: false, value: undefined};
  }
};
const describeError = function (error) {
  let name = "", message = "", stack = "";
  if (error !== null && (typeof error === "object" || typeof error === "function")) {
    try { const n = error.name; if (typeof n === "string") name = n; } catch (e) {}
    try { const m = error.message; if (typeof m === "string") message = m; } catch (e) {}
    try { const s = error.stack; if (typeof s === "string") stack = s; } catch (e) {}
  } else if (typeof error !== "symbol") {
    message = "" + error;
  }
  return '{"name":' + quote(name) + ',"message":' + quote(message) +
    ',"stack":' + quote(stack) + "}";
};
const field = function (object, key) {
  const got = read(object, key);
  if (!got.ok) return '{"type":"threw","error":' + threw + "}";
  const value = got.value, type = kind(value);
  return '{"type":' + quote(type) + ',"value":' + str(value) + "}";
};
const names = function (object) {
  try { return keys(object); } catch (error) { threw = describeError(error); return null; }
};
const section = function (object, key, describe) {
  const got = read(object, key);
  if (!got.ok) return '{"type":"threw","error":' + threw + "}";
  const value = got.value, type = kind(value);
  let text = '{"type":' + quote(type);
  if (type === "object" || type === "function") {
    const list = names(value);
    if (list === null) return '{"type":"threw","error":' + threw + "}";
    text += ',"entries":{';
    for (let i = 0; i < list.length; i++) {
      const name = list[i];
      text += (i ? "," : "") + quote(name) + ":" + describe(value, name);
    }
    text += "}";
  }
  return text + "}";
};
const topic = function () { return "{}"; };
const producer = function (producers, name) {
  const got = read(producers, name);
  if (!got.ok) return '{"type":"threw","error":' + threw + "}";
  const value = got.value, type = kind(value);
  if (type !== "object" && type !== "function") return '{"type":' + quote(type) + "}";
  const schedule = read(value, "schedule");
  let text = '{"type":' + quote(type) + ',"handler":' + field(value, "handler");
  if (!schedule.ok) return text + ',"schedule":{"type":"threw","error":' + threw + "}}";
  const scheduleType = kind(schedule.value);
  text += ',"schedule":{"type":' + quote(scheduleType);
  if (scheduleType === "object") {
    text += ',"interval":' + field(schedule.value, "interval") +
      ',"cron":' + field(schedule.value, "cron");
  }
  return text + "}}";
};
const consumer = function (consumers, name) {
  const got = read(consumers, name);
  if (!got.ok) return '{"type":"threw","error":' + threw + "}";
  const value = got.value, type = kind(value);
  if (type !== "object" && type !== "function") return '{"type":' + quote(type) + "}";
  let text = '{"type":' + quote(type) + ',"prepare":' + field(value, "prepare") +
    ',"mutate":' + field(value, "mutate") + ',"next":' + field(value, "next");
  const subscribe = read(value, "subscribe");
  if (!subscribe.ok) return text + ',"subscribe":{"type":"threw","error":' + threw + "}}";
  const list = subscribe.value, listType = kind(list);
  text += ',"subscribe":{"type":' + quote(listType);
  if (listType === "array") {
    const length = read(list, "length");
    const count = length.ok && typeof length.value === "number" ? length.value : 0;
    text += ',"items":[';
    for (let i = 0; i < count; i++) text += (i ? "," : "") + field(list, i);
    text += "]";
  }
  return text + "}}";
};
let value, error = "null";
try {
  value = run(source + "\n;typeof workflow === 'undefined' ? undefined : workflow");
} catch (caught) {
  error = describeError(caught);
}
// What the script's top level left to promises (an async function past its first await,
// a .then callback) runs now: each `await null` queues this module behind every job already
// queued, so each round lets one more generation of the script's jobs run.
for (let round = 0; round < promiseRounds; round++) await null;
let text = '{"error":' + error + ',"workflow":{"type":' + quote(kind(value));
if (error === "null" && (kind(value) === "object" || kind(value) === "function")) {
  text += ',"topics":' + section(value, "topics", topic) +
    ',"producers":' + section(value, "producers", producer) +
    ',"consumers":' + section(value, "consumers", consumer);
}
text += '},"touched":' + quote(touched) + ',"tool_calls":[';
for (let i = 0; i < callCount; i++) text += (i ? "," : "") + calls[i];
print(nonce + text + "]}");
