"""Which files a task's text asks its worker to change (issue 23): the one reading lint, the
run and the agent hook use (`plan.expected.reading` reads a task with it).

A file is asked to change only when it is the direct object of an imperative edit verb
("Regenerate tests/expected.txt", "Strip trailing whitespace from notes.md" names the place
a removal verb acts on, "Trim f14.txt to its first line"), or the place such a verb puts its
object ("add a line to X", "store the word in X", "save it as X", "copy new.txt over X",
"accept new.txt into X"), or a pronoun standing for it there ("The result file is wrong;
make it say 42"), or the file whose state the work is for ("fix the build so build.log has
no errors"). The verb must be in command position — opening the sentence or a clause of
its own, after "please", "you should", "I want you to", "could you" in a polite question —
never in a condition ("if X looks wrong, tell me"), a report ("tell me whether X is
outdated"), a question ("should X be regenerated?"), a relative clause ("X, which the
generator updates"), a description ("X is the reference output"), or a comparison ("make
out.txt match X", "format it like X"); and a quoted phrase is a mention. Everything else
that names a file is a mention, and a mention never frees it: `:writable:` stays the
explicit way. Fail-closed: a sentence that negates or keeps anything before the file is a
prohibition, and one that asks and negates after is unsure.
"""

from __future__ import annotations

import functools
import re

__all__ = ["ASKS", "FORBIDS", "SILENT", "UNSURE", "seems_about", "symptom_of_tests", "text_reading"]

#: How a text reads a file: it asks the worker to change it, forbids that, is unsure (it
#: both asks and says not to), or is silent (names it only as a mention, or not at all).
ASKS, FORBIDS, UNSURE, SILENT = "asks", "forbids", "unsure", "silent"

# Verbs (their base form: a command) that change their object, or the place a preposition
# names ("append a line to notes.txt").
_EDIT = frozenset(
    {
        "write", "rewrite", "update", "regenerate", "generate", "create", "change", "edit",
        "fix", "refresh", "produce", "replace", "modify", "overwrite", "make", "record",
        "re-record", "rerecord", "bless", "append", "fill", "extend", "add", "save", "bump",
        "set", "insert", "put", "remove", "delete", "raise", "increase", "decrease", "lower",
        "configure", "register", "pin", "enable", "disable", "rename", "correct", "adjust",
        "amend", "prepend", "truncate", "empty", "clear", "reformat", "regen", "redo",
        "rebuild", "implement", "complete", "finish", "refactor", "optimize", "optimise",
        "improve", "patch", "repair", "port", "sort", "clean", "dedupe", "switch",
        "deduplicate", "normalize", "normalise", "tidy", "reorder", "format", "convert",
        "strip", "translate", "redact", "pretty-print", "prettify", "beautify", "minify",
        "keep-only", "store", "uppercase", "upper-case", "lowercase", "lower-case",
        "capitalize", "capitalise", "titlecase", "trim", "drop", "erase", "purge", "prune",
        "cut", "crop", "sync", "synchronize", "synchronise", "indent", "dedent", "reindent",
        "re-indent", "wrap", "rewrap", "reflow", "unwrap", "alphabetize", "alphabetise",
        "resort", "re-sort", "renumber", "number", "recompute", "recalculate", "reverse",
        "shuffle", "escape", "unescape", "encode", "decode", "encrypt", "decrypt",
        "sanitize", "sanitise", "scrub", "anonymize", "anonymise", "mask", "censor",
        "shorten", "expand", "merge", "split", "join", "concatenate", "combine",
        "annotate", "comment", "uncomment", "populate", "reset", "restore", "revert",
        "migrate", "upgrade", "downgrade", "localize", "localise", "rephrase", "reword",
        "proofread", "polish", "simplify", "shrink", "squash", "collapse", "flatten",
        "transpose", "transform", "standardize", "standardise", "canonicalize",
        "canonicalise", "refill", "rotate", "pad", "quote", "unquote", "tag", "label",
        "filter", "export", "dump", "emit", "output", "re-generate",
        "recreate", "re-create", "recompile", "overhaul", "rework", "revise",
        "finalize", "finalise", "de-duplicate", "mend", "touch", "move", "copy", "accept",
        "apply", "paste", "promote", "commit", "import", "incorporate", "approve", "document",
        "summarize", "summarise", "describe", "explain",
    }
)  # fmt: skip
# Verbs whose object is a source and only the place they name changes ("copy A over X",
# "accept new.txt into X", "apply the patch to X").
_DESTINATION_ONLY = frozenset(
    {"copy", "accept", "apply", "paste", "import", "incorporate", "promote", "approve",
     "quote", "summarize", "summarise", "describe", "explain"}
)  # fmt: skip
# Verbs whose object is a source when a place with a name of its own follows it ("document
# X in notes.md", "merge X into Y", adversary-21 F15), and changes alone ("document X"); so
# are the verbs that transform a file, whose result may go to another (adversary-24c F1:
# "deduplicate X into Y", "convert X to Y", "sort X and write the result to Y").
_TRANSFORMING = frozenset(
    {"sort", "resort", "re-sort", "dedupe", "deduplicate", "de-duplicate", "convert",
     "translate", "filter", "clean", "format", "reformat", "normalize", "normalise",
     "transform", "uppercase", "upper-case", "lowercase", "lower-case", "capitalize",
     "capitalise", "titlecase", "minify", "prettify", "pretty-print", "beautify", "redact",
     "anonymize", "anonymise", "sanitize", "sanitise", "scrub", "mask", "censor", "encode",
     "decode", "encrypt", "decrypt", "escape", "unescape", "transpose", "reverse",
     "shuffle", "alphabetize", "alphabetise", "renumber", "number", "canonicalize",
     "canonicalise", "standardize", "standardise", "flatten", "split", "join",
     "concatenate", "combine", "proofread", "tidy", "keep-only"}
)  # fmt: skip
_SOURCE_BEFORE_PLACE = frozenset({"document", "merge"}) | _TRANSFORMING
# Verbs that put what their object holds at a place named after it ("save it as Y"): the
# object is then the source.
_SAVING = frozenset({"save", "store", "export", "dump"})
# The words naming where such a verb's result goes: a transforming verb's destination
# ("into Y", "to Y", "as Y"; never "in Y": "sort X by the order in keys.txt" sorts X), a
# saving verb's new name ("as Y"); document and merge take any place.
_DESTINATIONS: dict[str, frozenset[str]] = {
    **dict.fromkeys(_TRANSFORMING, frozenset({"to", "into", "onto", "as"})),
    **dict.fromkeys(_SAVING, frozenset({"as"})),
}
# Verbs whose object's source or target may be another file before the place they name
# ("save out.txt as tests/golden.txt", "bless new.txt as the new golden X").
_CARRYING = (
    _DESTINATION_ONLY
    | _TRANSFORMING
    | frozenset(
        {
            "save",
            "store",
            "bless",
            "move",
            "export",
            "dump",
            "commit",
            "merge",
            "record",
            "rename",
            "document",
        }
    )
)
# The prepositions after which a name is the place an edit verb acts, by kind of verb.
_PLACES = frozenset({"to", "in", "into", "inside", "within", "onto", "at"})
_REMOVAL = frozenset(
    {"remove", "delete", "strip", "drop", "erase", "purge", "prune", "cut", "crop", "trim",
     "clear", "filter", "redact", "scrub", "mask", "censor", "keep-only", "dedupe",
     "deduplicate", "de-duplicate"}
)  # fmt: skip
_AS_PLACE = frozenset(
    {"save", "store", "bless", "export", "dump", "record", "write", "output", "emit", "keep-only",
     "commit", "accept", "promote", "approve", "copy", "move", "rename"}
)  # fmt: skip
_OVER_PLACE = frozenset({"copy", "move", "paste", "write"})
# Words that end a name's phrase without a verb: the name is what the work is measured
# by, read from, or spoken of — a mention ("make out.txt match X", "in the format of X").
_COMPARING = frozenset(
    {
        "match", "matches", "matching", "matched", "equal", "equals", "equaling", "compare",
        "compares", "compared", "comparing", "against", "like", "same", "than", "versus",
        "vs", "per", "according", "identical", "equivalent", "similar", "consistent",
        "conform", "conforms", "correspond", "corresponds", "agree", "agrees", "based",
        "given", "described", "specified", "shown", "listed", "defined", "found", "provided",
        "following", "follows", "follow", "mirror", "mirrors", "reproduce", "reproduces",
        "using", "use", "uses", "via", "by", "reads", "read", "reading", "see", "check",
        "consult", "inspect", "look", "view", "open", "study", "review", "examine",
        "compute", "count", "parse", "load", "cite", "quote", "mention", "ignore", "skip",
        "verify", "validate", "test", "print", "show", "run", "mimic", "resemble",
        "resembles", "unlike", "differs", "differ", "derived", "taken", "copied",
        "generated", "produced", "written", "made", "stored",
    }
)  # fmt: skip
# Verbs of reading or using, in _COMPARING: a stop where they are a command ("Read X to
# see the format"), a noun elsewhere ("add a test to X").
_READING = frozenset(
    {"read", "see", "check", "use", "consult", "inspect", "look", "view", "open", "study",
     "review", "examine", "compute", "count", "parse", "load", "cite", "quote", "mention",
     "ignore", "skip", "verify", "validate", "test", "print", "show", "run", "mimic"}
)  # fmt: skip
# Words that open a clause of another kind (a condition, a report, a relative clause, a
# reason, a time): a name after them belongs to that clause, not to a command before.
_SUBORDINATE = frozenset(
    {"if", "whether", "unless", "when", "whenever", "because", "since", "although", "though",
     "while", "once", "which", "who", "whom", "whose", "where", "that", "so", "until",
     "before", "after", "then", "but", "as", "lest", "what", "how", "why", "in-case"}
)  # fmt: skip
# Punctuation that closes a phrase: a name after it is not a verb's object before it.
_BREAKS = frozenset({":", "(", ")", "--", "—", "–", "quote"})
# Nouns after which "of X" is a model, not the thing changed ("in the format of X").
_MODEL_NOUNS = frozenset(
    {"format", "style", "layout", "structure", "way", "shape", "pattern", "example",
     "spirit", "manner", "convention", "conventions", "order", "template", "model",
     "schema", "spec", "specification", "reference", "copy", "output", "contents"}
)  # fmt: skip
# Forms a finite verb takes after its subject: a name before one opens a clause of its own
# ("… and X is the reference output", "X holds the right output").
_FINITE = frozenset(
    {
        "is", "are", "was", "were", "isnt", "looks", "seems", "has", "had", "holds",
        "contains", "shows", "lists", "says", "reads", "gives", "describes", "defines",
        "should", "must", "will", "would", "can", "could", "may", "might", "needs", "remains",
        "stays", "matches", "differs", "becomes", "keeps", "gets", "lacks", "misses", "ends",
        "starts", "begins", "comes", "stands", "serves", "acts", "specifies", "documents",
        "tells", "expects", "wants", "uses", "mirrors", "records", "reflects", "represents",
        "does", "do", "did",
    }
)  # fmt: skip
# Words before a verb's spelling that make it a noun ("the set of lines", "a fix").
_DETERMINERS = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "each", "every", "any", "some",
     "its", "their", "his", "her", "our", "your", "my", "one", "no", "another", "other",
     "new", "old", "current", "whole", "entire", "same"}
)  # fmt: skip
# Words that may stand between a clause's opening and its command ("and then please also").
_OPENERS = frozenset(
    {"please", "also", "then", "now", "just", "simply", "first", "next", "finally",
     "kindly", "carefully", "again", "additionally", "lastly", "afterwards", "second",
     "third", "only", "quickly", "and", "or", "but", "so", "instead", "still", "further"}
)  # fmt: skip
# Words that, before a command's "to", make it the thing asked ("I want you to update X",
# "your job is to regenerate X", "be sure to bump …").
_TO_ASKS = frozenset(
    {"you", "is", "are", "job", "task", "goal", "aim", "sure", "remember", "need", "needs",
     "want", "asked", "please", "have", "has", "going", "supposed", "expected", "required"}
)  # fmt: skip
_POLITE = frozenset({"can", "could", "would", "will"})
_MODALS = frozenset({"should", "must", "can", "could", "would", "will", "shall", "may"})
_PRONOUNS = frozenset({"it", "them"})
# What makes a sentence a prohibition, or leaves it unsure whether it asks: a negation, or
# a word that keeps the file as it is ("leave X unchanged", "editing X is forbidden").
_KEEPING = frozenset(
    {
        "not", "never", "no", "nor", "without", "cannot", "dont", "avoid", "avoiding",
        "forbidden", "forbid", "forbids", "prohibited", "prohibit", "disallowed", "unchanged",
        "untouched", "intact", "leave", "keep", "keeps", "preserve", "preserved", "stay",
        "stays", "remain", "remains", "read-only", "readonly", "instead", "except",
        "refrain", "nothing", "neither", "only", "mustnt", "as-is",
    }
)  # fmt: skip
# Words that open a clause of its own after the file's: a negation there is not about it.
_NEW_CLAUSE = frozenset(
    {"so", "that", "then", "which", "until", "because", "where", "when", "while", "whenever",
     "if", "unless", "once", "after", "before", "to"}
)  # fmt: skip
# What a sentence says of a file to show that the text is about it ("X is wrong").
_BEING = frozenset({"is", "are", "was", "looks", "seems", "reads", "says", "has", "still"})
_DEFECTS = frozenset(
    {"wrong", "broken", "incorrect", "outdated", "out-of-date", "stale", "corrupt", "corrupted",
     "buggy", "invalid", "malformed", "unsorted", "bad", "truncated", "garbled", "misformatted"}
)  # fmt: skip
#: nouns of a defect a file holds ("there is a typo in X", "X has a bug")
_DEFECT_NOUNS = frozenset(
    {"typo", "typos", "bug", "bugs", "mistake", "mistakes", "error", "errors", "misspelling",
     "misspellings"}
)  # fmt: skip
#: what a modal says a corrected part is to be ("… it should be 8080", "… should read x")
_BECOMING = frozenset({"be", "read", "say", "become"})
#: what separates a defect from the value wanted in one sentence ("X is wrong: it should …")
_SPLICES = frozenset({":", ",", "--", "—", "–"})
#: words that open a clause saying what the work is for ("fix the build so build.log …")
_PURPOSE = frozenset({"so", "until"})
#: verbs that say what a file holds, in such a clause ("… so build.log has no errors")
_STATE = frozenset({
    "has", "have", "contains", "contain", "shows", "show", "says", "say", "holds", "hold",
    "lists", "list", "gets", "get", "ends",
})  # fmt: skip
# What a name run (a test, a check) may be made to do without being changed ("make the tests
# pass", "make sure tests/test_calc.py succeeds"), and words that may stand before it.
_OUTCOME = frozenset(
    {"pass", "passes", "passing", "green", "succeed", "succeeds", "work", "works", "run",
     "runs", "compile", "compiles", "fail", "fails"}
)  # fmt: skip
_OUTCOME_FILLER = frozenset({"all", "still", "again", "now", "both", "each", "then", "also"})
_CONJUNCTIONS = frozenset({"and", "or", "nor", "but", "then", "also", "plus"})
# How a text names a check's own test files without their path (adversary-13 F7,
# adversary-14 F7): "the test(s)", "the test suite", "the test file", "the existing tests" —
# never "the failing tests" (a symptom: "fix the failing tests" asks for working code), nor
# a noun the word qualifies ("the test runner", "the test output").
_TEST_DETERMINER = r"(?:the|this|that|these|those|all\s+(?:of\s+)?the|all|each|every|both)"
_TEST_ADJECTIVE = (
    r"(?:existing|current|old|unit|python|pytest|visible|wrong|incorrect|outdated|stale"
    r"|faulty|erroneous|mistaken|bad|two|three|few|remaining|affected)"
)
_TEST_NOUN = r"(?:test\s+suite|test\s+files?|test\s+cases?|test\s+modules?|tests?)"
_TEST_QUALIFIED = (
    r"(?!\s+(?:runner|command|output|outputs|results?|reports?|logs?|runs?|data|fixtures?"
    r"|helpers?|coverage|framework|harness|config|configuration|directory|dir|folder"
    r"|tool|tools|step|phase|name|names|count|ids?|failures?|errors?|breakages?|problems?"
    r"|issues?|suite|cases?|files?|modules?)\b)"
)
# After the tests' phrase: they are named by what they do ("the tests that fail", "fix the
# tests so they pass"): a symptom, not the files (`_TEST_SYMPTOM`).
_TEST_DOING = (
    r"(?:\s*,?\s+(?:that|which)\s+(?:still\s+)?(?:fail|fails|failed|break|breaks|error"
    r"|are\s+failing|is\s+failing|are\s+broken|is\s+broken|do\s+not\s+pass"
    r"|don't\s+pass|doesn't\s+pass|does\s+not\s+pass)\b"
    r"|\s+so\s+(?:that\s+)?(?:they|it)\s+(?:all\s+)?(?:pass|passes|succeed|succeeds"
    r"|work|works|go\s+green|are\s+green|is\s+green)\b"
    # "fix the tests by fixing calc.py": the means says what is changed, not the tests
    r"|\s+by\s+\w+ing\b)"
)
_TEST_SYMPTOM_WORD = r"(?:failing|broken|red|erroring|failed)"
# (never a possessive: "fix the tests' failures" names the failures)
_TEST_PHRASE = rf"{_TEST_DETERMINER}\s+(?:{_TEST_ADJECTIVE}\s+)*{_TEST_NOUN}(?![\w/'’-]|\.\w)"
# Words that may follow "the test(s)" as the verb's object ("fix the tests so …", "update
# the tests and calc.py", "leave the tests as they are"); any other word after them, with a
# noun before them, makes them a relative clause's subject ("fix the code the tests
# exercise", "fix the bug the test suite found"): not what is changed.
_TEST_OBJECT_NEXT = frozenset(
    {"and", "or", "nor", "but", "so", "to", "in", "into", "for", "with", "as", "until",
     "that", "which", "too", "now", "again", "first", "then", "only", "also", "if", "when",
     "because", "since", "while", "before", "after", "by", "from", "of", "at", "on",
     "under", "where", "accordingly", "please", "instead"}
)  # fmt: skip
# "the test in tests/test_calc.py", "the tests under tests/": the file (or directory) named
_TEST_IN = re.compile(
    rf"(?<![\w./-]){_TEST_PHRASE}\s+(?:in|of|inside|within|under)\s+(?P<name>[\w./-]*[\w/])",
    re.I,
)
_TEST_BARE = re.compile(
    rf"(?<![\w./-]){_TEST_PHRASE}{_TEST_QUALIFIED}(?!{_TEST_DOING})"
    rf"(?!\s+(?:are|is|were|was|keep|keeps|still)\s+(?:still\s+)?{_TEST_SYMPTOM_WORD})"
    r"(?!\s+fail)",
    re.I,
)
# "the failing test in tests/test_calc.py": tests named by their symptom, where they are
# (adversary-24c F9), never the file
_TEST_SYMPTOM_IN = re.compile(
    rf"(?<![\w./-]){_TEST_DETERMINER}\s+(?:\w+\s+)?{_TEST_SYMPTOM_WORD}\s+{_TEST_NOUN}"
    r"\s+(?:in|of|inside|within|under)\s+[\w./-]*[\w/]",
    re.I,
)
# "tests/test_calc.py fails.", "Sort out tests/test_calc.py: it has been red since …": a test
# file named by what running it reports (adversary-28b F7), whose "fix it" that follows
# asks for code that passes it, never the file
_TEST_FILE_FAILS = re.compile(
    r"(?<![\w./-])(?:[\w.-]+/)*(?:test_[\w-]*|[\w-]+_test)\.py"
    r"(?=\s+(?:still\s+)?(?:fails|is\s+failing|is\s+red|has\s+been\s+(?:red|failing)"
    r"|keeps\s+failing|is\s+broken)\b"
    r"|\s*[:;,]\s*it\s+(?:still\s+)?(?:fails|is\s+failing|is\s+red|has\s+been\s+(?:red|failing)"
    r"|keeps\s+failing|is\s+broken)\b)",
    re.I,
)
# A test file's name in a text (`tests/test_calc.py`, `calc_test.py`).
_TEST_NAME = re.compile(r"(?<![\w./-])(?:[\w.-]+/)*(?:test_[\w-]*|[\w-]+_test)\.py\b", re.I)
# A request to change tests named by their symptom, which the reading cannot decide:
# "fix the failing tests" (the code, usually), "the tests are broken: fix them".
_TEST_VERB = r"(?:fix|repair|debug|correct|update|change|edit|rewrite|adjust|amend|modify)"
_TEST_SYMPTOM = re.compile(
    rf"\b{_TEST_VERB}\s+{_TEST_DETERMINER}\s+(?:\w+\s+)?{_TEST_SYMPTOM_WORD}\s+{_TEST_NOUN}\b"
    rf"|\b{_TEST_NOUN}\s+(?:are|is)\s+(?:still\s+)?{_TEST_SYMPTOM_WORD}\b"
    r"[^.!?;]{0,40}?\b(?:fix|repair|update|change|edit|correct|adjust)\s+(?:it|them)\b"
    rf"|\b{_TEST_VERB}\s+{_TEST_DETERMINER}\s+(?:[\w'’]+\s+){{0,3}}?(?:failures?|errors?)\b"
    rf"|\b{_TEST_VERB}\s+{_TEST_DETERMINER}\s+(?:{_TEST_ADJECTIVE}\s+)*{_TEST_NOUN}['’]"
    rf"|\b{_TEST_VERB}\s+{_TEST_PHRASE}{_TEST_DOING}",
    re.I,
)
_MAX_BETWEEN = 5  # words between a verb and its object ("write the final answer to X")
_MAX_TO_PLACE = 10  # words between a verb and the place it names ("add the missing line z to X")
_TOKEN = re.compile(r"[^\s,;:()\"`—–]+|[,;:()—–]")
# A sentence ends at `.`, `!` or `?` before a space (or the text's end), and at `;`.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|;|\n\s*\n")
_FILE_LIKE = re.compile(r"^[\w./*?-]*(/[\w.*?-]+|\w\.[A-Za-z*?][\w*?]*)$")
_LIST_ITEM = re.compile(r"^(?:[-+*•]|\d+[.)]|[a-z][.)])\s+")
_HEADING = re.compile(r"^(?:\*+|#+)\s+")
# A quoted phrase of more than one word is a mention (`` `fix X` ``, "update X"); a quoted
# name alone is the name.
_QUOTED = re.compile(r"`([^`]*)`|\"([^\"]*)\"|“([^”]*)”")
_PHRASES = (
    (re.compile(r"\bkeep\s+(only|just)\b(?![\w./-])", re.I), "keep-only"),
    (re.compile(r"\bleave\s+only\b(?![\w./-])", re.I), "keep-only"),
    (re.compile(r"\bpretty[\s-]print\b(?![\w./-])", re.I), "pretty-print"),
    (re.compile(r"\bin\s+case\b(?![\w./-])", re.I), "in-case"),
    (re.compile(r"\bclean\s+up\b(?![\w./-])", re.I), "clean"),
    (re.compile(r"\btidy\s+up\b(?![\w./-])", re.I), "tidy"),
    (re.compile(r"\bfill\s+in\b(?![\w./-])", re.I), "fill"),
    (re.compile(r"\bfill\s+out\b(?![\w./-])", re.I), "fill"),
    (re.compile(r"\bflesh\s+out\b(?![\w./-])", re.I), "fill"),
    (re.compile(r"\bsort\s+out\b(?![\w./-])", re.I), "sort"),
    (re.compile(r"\bwrite\s+out\b(?![\w./-])", re.I), "write"),
    # "bring X up to date" (adversary-18 F12): "update X"
    (re.compile(r"\bbring\s+up[\s-]to[\s-]date\b", re.I), "update"),
    (
        re.compile(r"\bbring\s+((?:[^\s!?;:,()]+\s+){1,5}?)up[\s-]to[\s-]date\b", re.I),
        r"update \1",
    ),
    (re.compile(r"\b(let|tell)\s+(me|us)\s+know\b", re.I), "tell"),
    (re.compile(r"\blet's\b|\blets\b", re.I), "please"),
    (re.compile(r"\bi'd\s+like\s+you\s+to\b", re.I), "please"),
    (re.compile(r"\bmake\s+sure\s+(?:to|you)\b", re.I), "please"),
)


@functools.lru_cache(maxsize=4096)
def text_reading(
    text: str,
    path: str,
    *,
    anywhere: bool = False,
    sole_stem: bool = False,
    test_file: bool = False,
) -> str:
    """How `text` reads `path`: each sentence naming it asks, keeps (forbids), both (unsure)
    or neither; a text that asks in one sentence and keeps in another is unsure. With
    `anywhere`, a file of that name in any directory; `sole_stem`: the stem alone names it;
    `test_file`: `path` is one of the task's check's own test files, which "the test(s)",
    "the test suite" and "the test in FILE" name too (`_test_aliased`)."""
    if not test_file and not _may_name(text, path):
        return SILENT
    found: set[str] = set()
    before: list[str] = []
    bare = test_file and _bare_tests_name(text, path)
    for sentence in sentences(text):
        # "fix the failing test in X": a symptom (what the code does), as "the failing
        # tests" is, whichever task's text says it
        sentence = _TEST_SYMPTOM_IN.sub("the-failing-tests", sentence)
        sentence = _TEST_FILE_FAILS.sub("the-failing-tests", sentence)
        aliased = _aliased(sentence, path, sole_stem=sole_stem)
        if test_file:
            aliased = _test_aliased(aliased, path, bare=bare)
        words = _words(aliased)
        found.add(
            _sentence_reading(words, path, anywhere=anywhere, before=before, test_file=test_file)
        )
        before = words
    if UNSURE in found or {ASKS, FORBIDS} <= found:
        return UNSURE
    for kind in (ASKS, FORBIDS):
        if kind in found:
            return kind
    return SILENT


@functools.lru_cache(maxsize=4096)
def seems_about(text: str, path: str, *, sole_stem: bool = False, test_file: bool = False) -> bool:
    """Whether `text` seems to be about changing `path` though it does not ask to (lint
    warns, pointing to `:writable:`): some sentence, outside a condition, question or
    comparison, says the file is wrong ("X is outdated") or names it as the object of a
    command word the reading does not know as an edit verb ("Frobnicate X"); or, for a
    check's own test file (`test_file`), asks to change tests named by their symptom ("fix
    the failing tests": `symptom_of_tests`)."""
    if text_reading(text, path, sole_stem=sole_stem, test_file=test_file) != SILENT:
        return False
    if test_file and symptom_of_tests(text):
        return True
    for sentence in sentences(text):
        if sentence.rstrip().endswith("?"):
            continue
        words = _words(_aliased(sentence, path, sole_stem=sole_stem))
        for at in _at(words, path, anywhere=False):
            if any(w in _SUBORDINATE or w in ("tell", "report", "ask") for w in words[:at]):
                continue
            rest = words[at + 1 : at + 5]
            if rest and rest[0] in _BEING and any(w in _DEFECTS for w in rest[1:]):
                return True
            if _needs_something(words, at):
                return True  # "X needs a header line": a need the reading is unsure is a change
            opener = _clause_start(words, at)
            if opener is not None and opener < at and _unknown_command(words, opener, at):
                return True
    return False


def sentences(text: str) -> list[str]:
    """The text's sentences: a line that does not end one and a lowercase line after it (a
    wrapped sentence) read together, a list item or a heading on its own; a quoted phrase
    of more than one word stands as one word (a mention)."""
    lines: list[str] = []
    for raw in text.replace("\u2019", "'").splitlines():
        line = raw.strip()
        if not line:
            lines.append("")
            continue
        item = _LIST_ITEM.match(line) or _HEADING.match(line)
        if item:
            lines += ["", line[item.end() :]]
            continue
        if lines and lines[-1] and lines[-1][-1] not in ".!?:;" and line[0].islower():
            lines[-1] += " " + line
        else:
            lines.append(line)
    return [s for line in lines for s in _SENTENCE.split(_unquoted(line)) if s.strip()]


def _unquoted(line: str) -> str:
    def one(match: re.Match[str]) -> str:
        inner = next(g for g in match.groups() if g is not None).strip()
        return inner if inner and not re.search(r"\s", inner) else " quote "

    return _QUOTED.sub(one, line)


def _words(sentence: str) -> list[str]:
    for pattern, replacement in _PHRASES:
        sentence = pattern.sub(replacement, sentence)
    words = []
    for token in _TOKEN.findall(sentence):
        word = token.strip("'").rstrip(".!?").lower()
        if word == "-":
            word = "--"
        if word.endswith("'s") and _file(word[:-2]):
            words += [word[:-2], "'s"]  # "render5.py's output": the file, then its part
        elif word:
            words.append(word)
    if sentence.rstrip().endswith("?"):
        words.append("?")
    return words


def _aliased(sentence: str, path: str, *, sole_stem: bool = False) -> str:
    """The sentence with the file's other names spelled as `path`: its stem as a word followed
    by "file" ("the result file" for `result.txt`), and the stem alone when it cannot mean
    anything else — a name with no suffix, one whose stem is spelled in capitals
    (`CHANGELOG.md`: "the changelog", `Makefile`: "the makefile"), or, with `sole_stem`, one
    no other file in view shares its stem with ("the report" for `out/report.txt` when the
    check read no other `report.*`); case-insensitive."""
    name = path.rsplit("/", 1)[-1]
    stem = name.split(".", 1)[0] if not name.startswith(".") else name
    if not stem or not re.fullmatch(r"[\w-]+", stem):
        return sentence

    def alias(match: re.Match[str]) -> str:
        return match.group(0) if _content(sentence[match.end() :]) else path

    sentence = re.sub(rf"(?<![\w./-])(?i:{re.escape(stem)})\s+(?i:file)\b", alias, sentence)
    if name == stem or (len(stem) > 2 and (stem.isupper() or sole_stem)):
        sentence = re.sub(rf"(?<![\w./-])(?i:{re.escape(stem)})(?![\w/-]|\.\w)", alias, sentence)
    return sentence


def _may_name(text: str, path: str) -> bool:
    """Whether `text` can name `path` at all: every spelling a sentence reads as it — the
    path, its name in any directory, a pronoun whose antecedent is one of those, the stem
    aliases of `_aliased` — holds the file's stem, so a text without it is silent on the file
    (lint asks this of every task for every file a check reads)."""
    stem = naming_stem(path)
    return not stem or stem in text.casefold()


def naming_stem(path: str) -> str:
    """The part of `path` every spelling of it in a text holds (`_may_name`), case-folded:
    its name's stem (`report` for `out/report.txt`), or the whole name of a dot file."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return (name.split(".", 1)[0] if not name.startswith(".") else name).casefold()


def _bare_tests_name(text: str, path: str) -> bool:
    """Whether "the test(s)" alone may name the test file `path`: the text names no test file
    by its name, or names this one ("The test in tests/test_calc.py is wrong: fix the
    test") — a text naming another ("fix the test in tests/test_mul.py") does not ask for
    this one."""
    named = {n.lower().removeprefix("./") for n in _TEST_NAME.findall(text)}
    return not named or path.lower().removeprefix("./") in named


def _test_aliased(sentence: str, path: str, *, bare: bool) -> str:
    """The sentence with the phrases that name a check's test file `path` spelled as `path`:
    "the test in FILE" as FILE (`path` when FILE is it or a directory holding it), and, when
    `bare`, "the test(s)", "the test suite", "the existing tests" (`_TEST_BARE`). A phrase
    after which the tests are run, not changed ("make the tests pass"), stays a name the
    reading reads as such (`_outcome_follows`)."""
    wanted = path.lower().removeprefix("./")

    def named(match: re.Match[str]) -> str:
        name = match.group("name")
        plain = name.lower().removeprefix("./").rstrip("/")
        if _clause_subject(sentence, match.start(), match.end()):
            return "the-tests"  # "fix the code the tests in tests/ exercise": no name
        return path if plain == wanted or wanted.startswith(plain + "/") else name

    def bare_name(match: re.Match[str]) -> str:
        if _clause_subject(sentence, match.start(), match.end()):
            return match.group(0)  # "fix the code the tests exercise": a clause's subject
        return path

    sentence = _TEST_IN.sub(named, sentence)
    return _TEST_BARE.sub(bare_name, sentence) if bare else sentence


def _clause_subject(sentence: str, start: int, end: int) -> bool:
    """Whether the tests' phrase at `start`:`end` is a relative clause's subject: a noun
    before it (no verb, conjunction or preposition) and a content word after it ("fix the
    code the tests exercise", "fix the bug the test suite found")."""
    before = re.findall(r"[\w'-]+|[^\w\s]", sentence[:start])
    after = re.match(r"\s+([\w'-]+)", sentence[end:])
    return bool(
        before
        and before[-1][0].isalpha()
        and before[-1].lower() not in _EDIT | _SUBORDINATE | _PLACES | _CONJUNCTIONS
        and after
        and after.group(1)[0].isalpha()
        and after.group(1).lower() not in _TEST_OBJECT_NEXT | _SUBORDINATE | _PLACES
    )


def symptom_of_tests(text: str) -> bool:
    """Whether the text asks to change tests named by their symptom ("fix the failing
    tests", "the tests are broken: fix them"), which the reading does not read as asking for
    the test files (usually the code is meant): lint says so (T031)."""
    return any(_TEST_SYMPTOM.search(s) for s in sentences(text))


def _outcome_follows(words: list[str], at: int) -> bool:
    """Whether the name at `at` is followed by what it is made to do when run ("make the
    tests pass", "make sure X still succeeds"): a name run, not one changed."""
    i = at + 1
    while i < len(words) and words[i] in _OUTCOME_FILLER:
        i += 1
    return i < len(words) and words[i] in _OUTCOME


def _content(rest: str) -> bool:
    """Whether a word read as a file's other name is the content of a change with an
    explicit destination after it in its clause ("Write the solution into out3.txt", "Find
    the result and save it to out.txt"): a common noun there names what is written, never
    the file of that stem (adversary-14 F6)."""
    words = _words(rest)
    for i, word in enumerate(words):
        if word in _BREAKS or word in (",", ";") or (word in _SUBORDINATE and word != "so"):
            return False  # "Update the data, then write the total to out.txt": its own
        if word in _PLACES and any(_file(w) for w in words[i + 1 : i + 4]):
            return True
    return False


def _keeps(word: str) -> bool:
    return word in _KEEPING or "n't" in word


def _file(word: str) -> bool:
    return bool(_FILE_LIKE.match(word)) and not word.startswith("[")


def _at(words: list[str], path: str, *, anywhere: bool) -> list[int]:
    wanted = path.lower().removeprefix("./")
    return [
        i
        for i, w in enumerate(words)
        if w.removeprefix("./") == wanted or (anywhere and w.endswith("/" + wanted))
    ]


def _sentence_reading(
    words: list[str], path: str, *, anywhere: bool, before: list[str], test_file: bool = False
) -> str:
    at = _at(words, path, anywhere=anywhere)
    question = bool(words) and words[-1] == "?"
    wanted = path.lower().removeprefix("./")
    pronoun = [
        i
        for i, w in enumerate(words)
        if w in _PRONOUNS
        and (found := _antecedent(words, i, before)) is not None
        and (found == wanted or (anywhere and found.endswith("/" + wanted)))
    ]
    if not at and not pronoun:
        return SILENT
    named = at or pronoun
    ours = set(named)
    used = [i for i in at if _used_instead_in(words, i)]
    # negations that keep nothing: a defect ("X does not parse"), a value replaced ("use A
    # instead of B in X")
    spoken = _negated_states(words) | {
        k for i in used for k in range(min(i + 2, len(words))) if words[k] == "instead"
    }
    spoken |= _without_a_part(words)  # "write the rows without blanks to X": what X lacks

    def keeping(k: int) -> bool:
        return _keeps(words[k]) and k not in spoken

    if any(keeping(k) and not _keeps_another(words, k, ours) for k in range(named[-1])):
        return FORBIDS  # "don't modify X", "without changing X", "X must stay as it is"
    asks = (
        bool(used)
        or any(_asked(words, i, question) for i in at)
        or any(_asked(words, i, question) for i in pronoun)
        or (not test_file and any(_needs_change(words, i, question) for i in at))
        or (not question and any(_corrected(words, i) for i in at))
        or (not question and any(_value_wanted(words, i) for i in pronoun))
    )  # (a test's need is read only as a command: "the tests need fixing" is a symptom)
    if asks and _conditional(words):
        return UNSURE  # "if you rename a function, update the tests": maybe never (adv24d F1)
    if not test_file and not asks and any(_wanted_state(words, i, question) for i in at):
        return ASKS  # what follows says the state wanted ("… has no errors"), not a keeping
    # (a test's state wanted is its outcome, never its content: "fix calc.py so the tests
    # have no failures" asks nothing of them)
    after = named[-1] + 1
    if (
        asks
        and any(
            keeping(k) and not _keeps_another(words, k, ours)
            for k in range(after, after + len(_clause_after(words, named[-1])))
        )
        and (test_file or not _wanted_state(words, named[-1], question))
    ):
        return UNSURE  # "regenerate X, not Y": which does it keep? ("so X has no …" wants)
    if (
        not asks
        and at
        and any(
            keeping(k) for k in range(at[-1] + 1, at[-1] + 1 + len(_clause_after(words, at[-1])))
        )
    ):
        return FORBIDS
    return ASKS if asks else SILENT


#: what a thing that does not work fails to do, or is not: "X does not parse", "X isn't
#: valid" state a defect (adversary-21 F11), never a keeping
_FUNCTIONING = frozenset(
    {"parse", "load", "compile", "work", "build", "run", "validate", "pass", "import", "open",
     "render", "install", "start", "execute", "valid", "sorted", "correct", "right",
     "well-formed", "formatted", "readable", "consistent", "complete", "accurate"}
)  # fmt: skip
_NEGATING_AUX = frozenset(
    {"does", "do", "did", "is", "are", "was", "were", "will", "would", "can", "could"}
)


def _without_a_part(words: list[str]) -> set[int]:
    """Each "without" that says what a result lacks ("the rows without blanks", "a list
    without duplicates"), not what is kept: no action (a gerund: "without changing X"), no
    keeping verb, no file and no pronoun comes next, past a determiner."""
    found = set()
    for k, word in enumerate(words):
        if word != "without":
            continue
        rest = [w for w in words[k + 1 : k + 4] if w not in _DETERMINERS]
        head = rest[0] if rest else ""
        if not head.isalpha() or head.endswith("ing") or head in _KEEPING_VERBS:
            continue
        if head in _PRONOUNS or _file(head):
            continue
        found.add(k)
    return found


def _negated_states(words: list[str]) -> set[int]:
    """The negations that state a defect: "does not parse", "doesn't work", "is not valid",
    "won't compile" — a negated verb of working or adjective of soundness after a finite
    auxiliary (or fused with it), at most one adverb between."""
    found = set()
    for k, word in enumerate(words):
        fused = word in ("doesn't", "don't", "isn't", "aren't", "won't", "can't", "cannot",
                         "didn't", "wasn't")  # fmt: skip
        if not fused and not (word == "not" and k > 0 and words[k - 1] in _NEGATING_AUX):
            continue
        rest = [w for w in words[k + 1 : k + 3] if w not in ("even", "yet", "always", "quite")]
        if rest and (rest[0] in _FUNCTIONING or rest[0].rstrip("s") in _FUNCTIONING):
            found.add(k)
    return found


def _used_instead_in(words: list[str], at: int) -> bool:
    """Whether the name at `at` is the place a value is used instead of another: "Use port
    8080 instead of 8000 in X" (adversary-21 F6) — "use" in command position, "instead"
    before the name, no other file named between."""
    if at < 4 or words[at - 1] not in ("in", "inside", "within"):
        return False
    for start in range(at - 1, -1, -1):
        if words[start] == "use":
            break
    else:
        return False
    between = words[start + 1 : at - 1]
    after = words[at + 1 : at + 2]  # "use 4-space indentation in X instead of tabs"
    return (
        _in_command_position(words, start, question=False)
        and (
            "instead" in between
            or (after == ["instead"] and not any(_file(w) for w in words[at + 1 :]))
        )  # ("use the values in ref.json instead of the old ones in X": X is the place)
        and not any(_file(w) for w in between)
    )


#: what ends the clause a negation keeps something in ("Without touching gen.py, …")
_CLAUSE_ENDS = frozenset({",", ";", ":", "--", "—", "–", "but", "then", "(", ")"})
#: words that let a keeping clause reach files it does not name ("… gen.py or anything else")
_REACHING = frozenset(
    {"it", "them", "anything", "everything", "all", "any", "other", "others", "else", "file",
     "files", "rest", "each", "every", "both", "nothing", "none", "one"}
)  # fmt: skip


def _keeps_another(words: list[str], at: int, ours: set[int]) -> bool:
    """Whether the negation or keeping word at `at` keeps another file, in a clause of its
    own: the clause around it (up to a comma, `;`, `but`, …) names some file, none of them
    the one read (at the positions `ours`), and nothing that could reach it (`it`,
    `anything else`). "Without touching gen.py, regenerate X" and "Regenerate X, but don't
    change gen.py" keep gen.py, not X (adversary-17 F18); "Don't touch gen.py or X",
    "Without changing anything, update X" keep X, and "Update X, not gen.py" (no verb of
    its own) stays unsure."""
    start = at
    while start > 0 and words[start - 1] not in _CLAUSE_ENDS:
        start -= 1
    end = at
    while end + 1 < len(words) and words[end + 1] not in _CLAUSE_ENDS:
        end += 1
    clause = range(start, end + 1)
    if any(i in ours for i in clause) or any(words[i] in _REACHING for i in clause):
        return False
    # a clause of its own says what it keeps with a verb ("don't change gen.py", "leave
    # gen.py unchanged"); a bare contrast ("update the tests, not calc.py") stays unsure
    verbal = any(_verbal(words[i]) for i in clause)
    return verbal and any(_file(words[i]) for i in clause)


#: keeping words that are verbs or states of their own ("leave gen.py unchanged")
_KEEPING_VERBS = frozenset(
    {"leave", "keep", "preserve", "unchanged", "untouched", "intact", "touch", "alter"}
)


def _verbal(word: str) -> bool:
    return (
        word in _EDIT
        or word in _KEEPING_VERBS
        or (word.endswith("ing") and not _file(word) and len(word) > 4)
    )


# What running a program or a test says, named by its possessive ("X's failure"): the
# verdict, not the file.
_VERDICT_NOUNS = frozenset(
    {"failure", "failures", "complaint", "complaints", "finding", "findings", "failing",
     "verdict", "verdicts", "objection", "objections", "rejection", "rejections"}
)  # fmt: skip


def _verdict_of(words: list[str], at: int) -> bool:
    """Whether the name at `at` is a possessive whose noun is what running it reported
    ("X's failure", "X's complaints", "X's latest findings")."""
    if at + 1 >= len(words) or words[at + 1] != "'s":
        return False
    rest = [w for w in words[at + 2 : at + 4] if w.isalpha()]
    return any(w in _VERDICT_NOUNS for w in rest[:2])


def _antecedent(words: list[str], at: int, before: list[str]) -> str | None:
    """The file a pronoun at `at` stands for: the nearest name before it (in its sentence,
    else in the sentence before), when that name is a clause's subject or a command's
    object — not one in a condition, a comparison or after a preposition."""
    for seq, end in ((words, at), (before, len(before))):
        for i in range(end - 1, -1, -1):
            if _file(seq[i]) and _verdict_of(seq, i):
                return None  # "investigate X's failure and fix it": it is the failure
            if _file(seq[i]):
                topic = _topic(seq, i) or _defective_part(seq, i) or _defect_subject(seq, i)
                return seq[i].removeprefix("./") if topic else None
            if seq is words and seq[i] in _SUBORDINATE and seq[i] not in ("then", "but", "so"):
                return None  # the pronoun is in a clause of its own
    return None


def _defective_part(words: list[str], at: int) -> bool:
    """Whether the name at `at` holds its sentence's subject, said to be wrong: "The
    expected output in X is outdated: bring it up to date" (adversary-18 F12) — a noun
    phrase of at most four words opening the sentence, "in" or "of" the name, then a
    defect (`_DEFECTS`, as `seems_about` reads it)."""
    if at < 2 or words[at - 1] not in ("in", "of") or at - 1 > 4:
        return False
    phrase = words[: at - 1]
    if phrase[0] not in _DETERMINERS or not all(w.isalpha() for w in phrase):
        return False
    if any(w in _SUBORDINATE | _FINITE | _KEEPING | _COMPARING for w in phrase):
        return False
    rest = words[at + 1 : at + 5]
    return bool(rest) and rest[0] in _BEING and any(w in _DEFECTS for w in rest[1:])


def _defect_subject(words: list[str], at: int) -> bool:
    """Whether the name at `at` is in its sentence's subject, said to hold a defect (a bug
    ticket, adversary-19 F13): "The port in X is wrong", "The server in X listens on the
    wrong port", "X has a typo", "X's port is wrong", "There is a typo in X" — never in a
    question, a condition or a comparison."""
    if not words or words[-1] == "?" or any(w in _SUBORDINATE for w in words[:at]):
        return False
    if _defective_part(words, at):
        return True
    head = words[:at]
    if head and head[0] == "there":  # "there is a typo in X", "there are two bugs in X"
        return (
            1 < len(head) <= 6
            and head[1] in ("is", "are", "'s")
            and head[-1] in ("in", "of")
            and any(w in _DEFECT_NOUNS or w in _DEFECTS for w in head[2:-1])
        )
    if head and (
        head[0] not in _DETERMINERS
        or len(head) > 4
        or head[-1] not in ("in", "of")
        or not all(w.isalpha() for w in head)
        or any(w in _FINITE | _KEEPING | _COMPARING | _EDIT for w in head[1:-1])
    ):
        return False  # "the server in X …": a noun phrase holding the name opens the sentence
    clause: list[str] = []
    for word in words[at + 1 :]:
        if word in _SPLICES or word in _SUBORDINATE:
            break
        clause.append(word)
    if clause[:1] == ["'s"]:  # "X's port is wrong"
        clause = clause[2:] if len(clause) > 2 and clause[2] in _BEING else []
    if not clause or not (clause[0] in _FINITE or (clause[0].isalpha() and clause[0][-1] == "s")):
        return False  # the name's own verb follows it ("X has …", "X listens …")
    if any(_keeps(w) or w in _COMPARING or _file(w) for w in clause):
        return False
    return any(w in _DEFECTS or w in _DEFECT_NOUNS for w in clause)


def _value_wanted(words: list[str], at: int) -> bool:
    """Whether the word at `at` opens a clause saying the value a defective part should have:
    "it should be 8080", "recieve should be receive", "both should read x" — a short subject
    naming no file, a modal, a verb of being, and a value that names no file and compares
    with nothing ("it should be the same as X", "it should match X" take it from X)."""
    if at > 0 and words[at - 1] not in _SPLICES:
        return False
    for end in range(at, min(at + 4, len(words))):
        word = words[end]
        if word in _MODALS:
            break
        if _file(word) or word in _KEEPING or word in _SUBORDINATE or word in _FINITE:
            return False
    else:
        return False
    if end == at or words[end] not in ("should", "must") or end + 2 >= len(words):
        return False
    if words[end + 1] not in _BECOMING:
        return False
    value = [w for w in words[end + 2 :] if w not in _SPLICES]
    if not value or (value[0] in ("the", "what", "whatever", "like", "as") and len(value) > 1):
        return False  # "the total of …", "what X holds": a value taken from elsewhere
    return not any(_file(w) or w in _COMPARING or w in _SUBORDINATE or _keeps(w) for w in value)


def _corrected(words: list[str], at: int) -> bool:
    """Whether the name at `at` is said to hold a defect and, after it in its sentence, the
    value wanted follows ("There is a typo in X: recieve should be receive")."""
    if not _defect_subject(words, at):
        return False
    return any(
        words[i] in _SPLICES and _value_wanted(words, i + 1) for i in range(at + 1, len(words))
    )


def _topic(words: list[str], at: int) -> bool:
    """Whether the name at `at` is what its clause is about: its subject or a command's
    object, with nothing but determiners or adjectives between it and the clause's start or
    its verb, and no condition, comparison or preposition governing it."""
    for back in range(at - 1, -1, -1):
        word = words[back]
        if word in _SUBORDINATE or word in _COMPARING or word in _BREAKS:
            return word in ("then", "but", "so", ":")
        if word in _PLACES or word in ("from", "with", "of", "as", "over", "for", "about", "on"):
            return False
        if word in (",", ";", "and", "or"):
            return True
        if word in _EDIT:
            return _command(words, back, question=False)
        if back < at - 3:
            return False
    return True


def _clause_after(words: list[str], at: int) -> list[str]:
    """The words after `at` up to the next clause of its own ("… so that it accepts a
    definition without a title" is about the program's behaviour, not the file)."""
    rest = words[at + 1 :]
    for i, word in enumerate(rest):
        if word in _NEW_CLAUSE:
            return rest[:i]
    return rest


#: verbs that put something into a place ("add a case to the list in X")
_ADDING = frozenset({"add", "append", "insert", "prepend", "put"})
#: nouns of a part of a file that holds entries: what is added to one is added to the file
_CONTAINERS = frozenset(
    {"list", "lists", "table", "tables", "section", "sections", "array", "arrays", "dict",
     "dictionary", "mapping", "map", "set", "tuple", "enum", "cases", "entries", "rows",
     "block", "parametrize", "parametrization", "fixture", "fixtures", "matrix", "config",
     "settings", "header", "footer", "end", "top", "bottom", "beginning", "start"}
)  # fmt: skip


def _added_into(words: list[str], to: int, at: int, question: bool) -> bool:
    """Whether "to the … in X" (`to` and the name at `at`) is a part of X something is added
    to: an adding verb governs it and a container names the part ("add a case to the
    parametrize list in X", adversary-19 F18), unlike a value taken from X ("change the
    answer to the one in X") or arithmetic on one ("add 1 to the number in X")."""
    if not any(w in _CONTAINERS for w in words[to + 1 : at]):
        return False
    for back in range(to - 1, -1, -1):
        if words[back] in _EDIT and _command(words, back, question=question):
            return words[back] in _ADDING
    return False


def _command(words: list[str], at: int, *, question: bool) -> bool:
    """Whether `words[at]` is an edit verb in command position: it opens the sentence or a
    clause of its own (after "and", a comma, "then", "please" …), follows "you should", "I
    want you to", "your job is to" — in a question only "can/could/would/will you" — and is
    not a noun of the same spelling ("a fix", "the format of X")."""
    return words[at] in _EDIT and _in_command_position(words, at, question=question)


def _in_command_position(words: list[str], at: int, *, question: bool) -> bool:
    """Whether the verb spelled at `at` is in command position (`_command`)."""
    if at + 1 < len(words) and words[at + 1] in ("of", "is", "are", "was", "for", "?"):
        return False  # "format of X:", "the fix is", a heading naming a thing
    i = at - 1
    while i >= 0 and words[i] in _OPENERS and words[i] not in ("and", "or", "but", "so"):
        i -= 1
    if question:
        return i >= 1 and words[i] == "you" and words[i - 1] in _POLITE
    if i < 0:
        return True
    prev = words[i]
    if prev in (",", ";", "--", "—", "–", ":", "(", "and", "or", "but", "so", "then", "please"):
        return not _in_subordinate(words, i)
    if prev == "to":
        return i > 0 and words[i - 1] in _TO_ASKS
    if prev in _MODALS:
        return i > 0 and words[i - 1] in ("you", "we")
    return False


def _in_subordinate(words: list[str], at: int) -> bool:
    """Whether the clause that the conjunction at `at` continues is a condition, report or
    relative clause with no comma closing it ("if it fails and you …": not a command)."""
    if words[at] not in ("and", "or"):
        return False
    for back in range(at - 1, -1, -1):
        word = words[back]
        if word in (",", ";", ":", "(", ")"):
            return False
        if word in _SUBORDINATE and word not in ("then", "but", "so"):
            return True
    return False


def _asked(words: list[str], at: int, question: bool) -> bool:
    """Whether the name (or pronoun) at `at` is the object of an edit verb in command
    position, or the place such a verb acts on."""
    if _written_by_a_program(words, at):
        return True  # "run gen.py, which writes X", "gen.py writes X": its output (adv24d F2)
    if at + 1 < len(words) and words[at + 1] in _FINITE:
        return False  # "… and X is the reference output": X opens a clause of its own
    if _relative_subject(words, at):
        return False  # "fix the bug tests/test_calc.py found": what X found is changed
    if at + 1 < len(words) and words[at + 1] in _AGREEING and words[at - 1] != "make":
        return False  # "make out.txt and X agree": a comparison, either side may be meant
        # ("make X match Y" changes X, adversary-18 F12; "make sure X matches Y" checks)
    if _compared_pair(words, at):
        return False  # "make sure X and out.txt are identical" (adversary-28b F2): either
    if _outcome_follows(words, at):
        return False  # "make the tests pass", "make sure X succeeds": X is run, not changed
    if at > 0 and words[at - 1] in ("'s",):
        return False
    if _place_first(words, at):
        return True
    prep: str | None = None  # the preposition that governs the name
    if at + 1 < len(words) and words[at + 1] == "'s":
        if _later_place(words, at, carried=True):
            return False  # "save render.py's output as X": the file is the source
        if _verdict_of(words, at):
            return False  # "debug X's failure": what running X says, not X (adv24c F9)
        prep = "of"  # "of render5.py's output": a part of the file, as "the output of X"
    other_file = False  # a name between the verb and this one (its object)
    between = 0
    aside = _asides(words, at)
    for back in range(at - 1, -1, -1):
        word = words[back]
        if back in aside:
            continue  # "switch the format to v2 (a `# v2` header) in X": an aside
        if word == "that" and _determiner_that(words, back, question):
            between += 1  # "add that header to X": a determiner, no clause
            continue
        if word in _EDIT and _command(words, back, question=question):
            if prep is not None and _later_place(words, at):
                return False  # "write the sum of the numbers in X to out.txt": X is a source
            if (
                prep is None
                and word in _SOURCE_BEFORE_PLACE | _SAVING
                and _later_place(
                    words, at, only=_DESTINATIONS.get(word), elaborated=word not in _SAVING
                )
            ):
                return False  # "document X in notes.md": notes.md changes, X is its source
                # ("deduplicate X into Y", "save it as upper.txt": what X holds goes there)
            return _takes(word, prep, other_file)
        if word == "between" and _file(words[back + 1]):
            return False  # "fix the diff between out.txt and X": a comparison
        if word == "as" and prep == "of" and _part_of_file(words[back + 1 : at]):
            prep = "to"  # "append X as the last line of Y": Y is where it goes (adv24c H3)
            continue
        if word in ("from", "with", "over", "as"):
            if prep in ("to", "into", "onto") or (word == "with" and prep in _PLACES):
                continue  # "add a section with … to X", "replace 80 with 8080 in X"
            if prep is not None and prep not in ("of",):
                return False  # "from the records in X": X is where the source is
            prep = word
        elif word in _READING and not _in_command_position(words, back, question=question):
            between += 1  # "a test_x test", "the run": a noun
        elif word in _BREAKS or word in _SUBORDINATE or word in _COMPARING or word == "?":
            return False
        elif word in _PLACES:
            if word == "to" and back + 1 < len(words) and words[back + 1] in _EDIT | _COMPARING:
                return False  # "to update X": an infinitive's object, not a place
            if (
                word == "to"
                and prep in _PLACES
                and prep != "to"
                and back + 1 < len(words)
                and words[back + 1] in _DETERMINERS | {"what", "whatever"}
                and not _added_into(words, back, at, question)
            ):
                return False  # "change the answer to the one in X": X holds the new value
                # (a source), unlike "set envlist to py312 in X" (the place)
            if prep is None or prep == "of":
                prep = word if prep is None else prep
            elif prep not in _PLACES:
                return False
        elif word == "of":
            if back > 0 and words[back - 1] in _MODEL_NOUNS and prep is None:
                return False  # "in the format of X", "a copy of X"
            prep = prep or "of"
        elif word in ("and", "or", ","):
            continue  # a list of objects ("to a.txt and b.txt")
        elif _file(word):
            listed = back + 1 < len(words) and words[back + 1] in (",", "and", "or")
            # inside a phrase of the object ("the numbers in data.txt"): not the object
            inside = back > 0 and words[back - 1] in ("of", "from", "in")
            other_file = other_file or not (listed or inside)
            continue
        else:
            between += 1
            if between > (_MAX_TO_PLACE if prep else _MAX_BETWEEN):
                return False
    return False


# Words that stand before a name without making it a relative clause's subject.
_NOT_A_NOUN = frozenset(
    {"of", "from", "with", "by", "than", "not", "without", "about", "only", "just", "also",
     "please", "both", "either", "neither", "all"}
)  # fmt: skip
# Pronouns a relative clause may follow ("fix everything X complains about").
_PRONOUN_HEADS = frozenset({"everything", "anything", "something", "whatever", "all"})
# Words after two names that compare them ("make out.txt and X agree").
_AGREEING = frozenset(
    {"agree", "agrees", "match", "differ", "differs", "disagree", "disagrees", "diverge"}
)
# What two names joined by "and" are said to be, or made to be, that compares them ("make
# sure X and Y are identical", "make X and Y the same"): either side may be meant.
_SAME_TAILS = (
    ("agree",),
    ("match",),
    ("identical",),
    ("equal",),
    ("equivalent",),
    ("the", "same"),
    ("in", "sync"),
    ("consistent",),
)


def _compared_pair(words: list[str], at: int) -> bool:
    """Whether the name at `at` is one of two joined by "and" that the words after them
    compare (are, or be made, identical, equal, the same, in sync)."""
    if at + 2 < len(words) and words[at + 1] == "and":
        tail = words[at + 3 :]
    elif at >= 2 and words[at - 1] == "and":
        tail = words[at + 1 :]
    else:
        return False
    if tail[:1] in (["are"], ["be"], ["stay"], ["remain"]):
        tail = tail[1:]
    if tail[:1] == ["all"] or tail[:1] == ["both"]:
        tail = tail[1:]
    return any(tuple(tail[: len(t)]) == t for t in _SAME_TAILS)


# Past forms a relative clause's verb takes that end in neither "s" nor "ed".
_IRREGULAR_PAST = frozenset(
    {"found", "caught", "hit", "ran", "saw", "showed", "wrote", "made", "gave", "broke",
     "threw", "raised", "flagged", "got", "put", "left", "kept", "took", "brought", "built"}
)  # fmt: skip


# A part of a file a value may become ("as the last line of X", "as the header of X").
_FILE_PARTS = frozenset(
    {"line", "lines", "row", "rows", "entry", "entries", "header", "footer", "title",
     "heading", "paragraph", "section", "item", "column", "field", "record", "key", "value"}
)  # fmt: skip


def _part_of_file(phrase: list[str]) -> bool:
    """Whether `phrase` (between "as" and a name) is a part of that file: "the last line
    of", "the new header of", "a row of"."""
    return (
        len(phrase) >= 2
        and phrase[-1] == "of"
        and phrase[-2] in _FILE_PARTS
        and len(phrase) <= 5
        and all(w.isalpha() or "-" in w for w in phrase)
    )


# Words that open a condition a request may never meet ("if you rename a function, update
# the tests"), wherever they stand; "when" and "once" only first, and not before a time
# ("when you are done").
_CONDITIONS = frozenset({"if", "unless", "whenever", "in-case"})
_ASKING_WHETHER = frozenset(
    {"check", "see", "verify", "ask", "know", "tell", "test", "find", "whether", "determine"}
)
_TIMES = frozenset({"done", "finished", "ready", "complete", "through"})


def _conditional(words: list[str]) -> bool:
    """Whether the sentence puts its request under a condition: a conditional word (not
    "check if …", an indirect question), or a first "when", "once" or "should" that does
    not name the time the work is done ("When you are done, …")."""
    for k, word in enumerate(words):
        if word in _CONDITIONS and not (k > 0 and words[k - 1] in _ASKING_WHETHER):
            return True
    if words and words[0] in ("when", "once", "should"):
        head = [w for w in words[1:4] if w not in ("you", "are", "you're", "it", "is", "all")]
        return not (head and head[0] in _TIMES)
    return False


# A program's writing its output, in the third person ("gen.py writes out.txt").
_WRITES = frozenset(
    {"writes", "produces", "generates", "creates", "outputs", "emits", "regenerates",
     "rewrites", "saves", "dumps", "exports", "renders"}
)  # fmt: skip


def _written_by_a_program(words: list[str], at: int) -> bool:
    """Whether the name at `at` is what a program named just before writes: "gen.py writes
    X", "run `python3 gen.py`, which writes X" — the program a script file (`.py`, `.sh`,
    `.js`), so its output is the work's."""
    if at < 2 or words[at - 1] not in _WRITES:
        return False
    k = at - 2
    if words[k] == "which" and k >= 2 and words[k - 1] == ",":
        k -= 2
    before = words[k]
    if before == "quote":  # "run `python3 gen.py`, which writes X": the command run
        return k > 0 and words[k - 1] in ("run", "rerun", "re-run", "execute")
    return _file(before) and before.endswith((".py", ".sh", ".js", ".mjs"))


def _relative_subject(words: list[str], at: int) -> bool:
    """Whether the name at `at` is the subject of a relative clause after a noun, with no
    "that": "fix the bug tests/test_calc.py found", "fix the lines expected.txt disagrees
    with" — a determiner, a noun, the name, then a verb in the third person or the past
    (an apposition, "rewrite the module calc.py completely", is no such clause)."""
    if at < 2 or at + 1 >= len(words):
        return False
    noun, det, verb = words[at - 1], words[at - 2], words[at + 1]
    if not verb.isalpha() or verb.endswith("ly"):
        return False
    if noun in _PRONOUN_HEADS or (_file(noun) and det not in (",", "and", "or")):
        det = "the"  # "fix everything X complains about", "the entries of out.txt X marks"
    elif not noun.isalpha():
        return False
    if noun in _EDIT | _DETERMINERS | _SUBORDINATE | _PLACES | _CONJUNCTIONS | _NOT_A_NOUN:
        return False
    if det not in _DETERMINERS | {"whatever", "whichever", "which", "what", "of"}:
        return False
    if verb in _SUBORDINATE | _PLACES | _CONJUNCTIONS | _NOT_A_NOUN:
        return False
    third_person = verb.endswith("s") and not verb.endswith(("ss", "us", "is"))
    return third_person or verb.endswith("ed") or verb in _IRREGULAR_PAST


def _later_place(
    words: list[str],
    at: int,
    *,
    carried: bool = False,
    elaborated: bool = False,
    only: frozenset[str] | None = None,
) -> bool:
    """Whether a place with a name of its own follows the name at `at` in its clause ("…
    in data.txt to out.txt"): then that is where the verb puts its object. `carried`: "as"
    and "over" name such a place too ("save X's output as golden.txt"). `elaborated`: a
    colon goes on with the same command ("clean up X: write the rows … to Y"). `only`: the
    words that may name the place (then "as" is one only if among them)."""
    rest = words[at + 1 :]
    places = _PLACES | {"as", "over"} if carried else _PLACES
    if only is not None:
        places, carried = only, "as" in only
    for i, word in enumerate(rest):
        if elaborated and word == ":":
            continue
        if (word in _BREAKS or word in _SUBORDINATE or word in (",", ";")) and not (
            carried and word == "as"
        ):
            return False
        if word in places and any(_file(w) for w in rest[i + 1 : i + 4]):
            return True
    return False


def _asides(words: list[str], at: int) -> set[int]:
    """The positions of the asides in parentheses that close before `at` ("switch the format
    to v2 (a `# v2` header) in X", "add a fixture returning (2, 3) in X"): a name after one
    is read past it. A negation inside one is still seen (`_sentence_reading` reads every
    word before the name)."""
    found: set[int] = set()
    opened: list[int] = []
    for i, word in enumerate(words[:at]):
        if word == "(":
            opened.append(i)
        elif word == ")" and opened:
            found.update(range(opened.pop(), i + 1))
    return found


def _determiner_that(words: list[str], at: int, question: bool) -> bool:
    """Whether "that" at `at` is a determiner: right after an edit verb in command position,
    before a word that is neither a name nor a pronoun ("add that header to X"; "add that
    X is the reference to notes.md" opens a clause)."""
    if at == 0 or at + 1 >= len(words):
        return False
    following = words[at + 1]
    return (
        _command(words, at - 1, question=question)
        and following.isalpha()
        and following not in _PRONOUNS | _DETERMINERS | _SUBORDINATE | _FINITE
        and (at + 2 >= len(words) or words[at + 2] not in _FINITE)
    )


#: what a file, as its sentence's subject, is said to need ("X needs updating", "X and Y
#: both need the new header", "X should be regenerated"): a change asked (adversary-18 F12)
_NEEDING = frozenset({"need", "needs", "require", "requires"})
_OBLIGING = frozenset({"should", "must"})
_NEW = frozenset(
    {"new", "updated", "fresh", "extra", "additional", "missing", "revised", "corrected", "v2"}
)
_CHANGE_NOUNS = frozenset(
    {"update", "updates", "fix", "fixes", "change", "changes", "edit", "edits", "rewrite",
     "refresh", "regeneration", "correction", "corrections"}
)  # fmt: skip
_SUBJECT_FILLER = frozenset({"and", "or", ",", "both", "all", "also", "too", "each", "still"})
_PARTICIPLES = frozenset(
    {"written", "rewritten", "made", "remade", "redone", "put", "set", "reset", "cut", "split"}
)


def _edit_form(word: str, ending: str) -> bool:
    """Whether `word` is an edit verb's form with `ending` ("ing": "updating"; "ed":
    "regenerated"), or an irregular participle (`_PARTICIPLES`) for "ed"."""
    if ending == "ed" and word in _PARTICIPLES:
        return True
    if not word.endswith(ending) or len(word) <= len(ending) + 2:
        return False
    stem = word[: -len(ending)]
    return any(c in _EDIT for c in (stem, stem + "e", stem[:-1], stem.removesuffix("e")))


def _needs_something(words: list[str], at: int) -> bool:
    """Whether the name at `at` is followed by "need(s)" or "require(s)" with no negation
    ("X needs a header line"): `seems_about` says so where `_needs_change` does not read a
    change in it (lint T031 warns)."""
    i = at + 1
    while i < len(words) and (words[i] in _SUBJECT_FILLER or _file(words[i])):
        i += 1
    if i >= len(words) or words[i] not in _NEEDING:
        return False
    return not any(_keeps(w) for w in words[i + 1 : i + 4])


def _needs_change(words: list[str], at: int, question: bool) -> bool:
    """Whether the name at `at` opens its sentence (or a clause after `:` or `;`) as the
    subject of a need for change: "X needs updating", "X needs to be regenerated", "X
    and Y both need the new header line", "X should be updated" — never in a question, a
    condition or a report ("tell me whether X needs updating": X is not the subject of the
    sentence), and never "X needs the input file" (nothing says a change)."""
    if question:
        return False
    start = at
    while start > 0 and (
        words[start - 1] in _SUBJECT_FILLER
        or words[start - 1] in ("the", "its")
        or _file(words[start - 1])
    ):
        start -= 1
    if start >= 3 and words[start - 1] in ("in", "of") and words[start - 3] == "the":
        start -= 3  # a part of the file as the subject: "the checksum in X must match …"
    if start > 0 and words[start - 1] not in (":", ";", "--", "—", "–"):
        return False
    i = at + 1
    while i < len(words) and (words[i] in _SUBJECT_FILLER or _file(words[i])):
        i += 1
    rest = words[i : i + 6]
    if not rest:
        return False
    if rest[0] in _OBLIGING:
        tail = [w for w in rest[1:] if w not in ("also", "both", "all")]
        if len(tail) >= 2 and tail[0] in ("match", "agree") and tail[1] != "with":
            # "X must match the new file": X is to change to fit what the work makes
            return any(w in _NEW for w in tail[1:4])
        return len(tail) >= 2 and tail[0] == "be" and _edit_form(tail[1], "ed")
    if rest[0] not in _NEEDING or len(rest) < 2:
        return False
    after = rest[1:]
    if after[0] == "to":
        return (len(after) > 1 and after[1] in _EDIT) or (
            len(after) > 2 and after[1] == "be" and _edit_form(after[2], "ed")
        )
    if _edit_form(after[0], "ing"):
        return True  # "needs updating"
    if after[0] not in ("a", "an", "the", "some", "this", "these", "its"):
        return False
    return any(w in _NEW or w in _CHANGE_NOUNS for w in after[1:4])


def _place_first(words: list[str], at: int) -> bool:
    """Whether the name at `at` is the place a sentence opens with before its command ("In
    pyproject.toml, bump the version to 0.2"), no other name after it."""
    if at != 1 or words[0] not in _PLACES:
        return False
    rest = words[at + 1 :]
    if len(rest) < 2 or rest[0] != ",":
        return False
    verb = 2 if rest[1] == "please" and len(rest) > 2 else 1
    if rest[verb] not in _EDIT:
        return False
    return not any(_file(w) for w in rest[verb + 1 :])


def _takes(verb: str, prep: str | None, other_file: bool) -> bool:
    """Whether `verb` changes a name governed by `prep` (None: its direct object)."""
    if prep is None or prep == "of":
        return verb not in _DESTINATION_ONLY and not other_file
    if other_file and verb not in _CARRYING:
        return False  # "write out.txt with … in X": the verb's object is that file
    if prep in _PLACES:
        return True
    if prep == "from":
        return verb in _REMOVAL
    if prep == "as":
        return verb in _AS_PLACE
    if prep == "over":
        return verb in _OVER_PLACE
    return False  # "with": a source ("sync X with new.txt")


def _wanted_state(words: list[str], at: int, question: bool) -> bool:
    """Whether the sentence wants the file at `at` to reach a state ("fix the build so
    build.log has no errors", "… until out.txt shows 42"): its name opens a purpose clause
    after a main clause that is no condition or statement, a verb of state follows it, and
    no comparison is made."""
    before = words[max(0, at - 3) : at]
    if not (any(w in _PURPOSE for w in before) and at + 1 < len(words)):
        return False
    if words[at + 1] not in _STATE or question:
        return False
    if any(w in _COMPARING or w in ("same", "as") for w in words[at + 2 :]):
        return False
    purpose = max(i for i in range(at) if words[i] in _PURPOSE)
    return purpose > 0 and not any(w in _SUBORDINATE or w in _FINITE for w in words[:purpose])


def _clause_start(words: list[str], at: int) -> int | None:
    """The index of the word that opens the clause the name at `at` is in (skipping
    openers and determiners), or None when a preposition or comparison governs the name."""
    start = at
    for back in range(at - 1, -1, -1):
        word = words[back]
        if word in (",", ";", ":", "(", "--") or word in _OPENERS:
            break
        if word in _PLACES or word in _COMPARING or word in ("from", "with", "as", "of"):
            return None
        start = back
    return start


def _unknown_command(words: list[str], opener: int, at: int) -> bool:
    """Whether the clause opens with a word that reads as a command the reading does not
    know ("Frobnicate notes.md"): not an edit verb, a determiner, a name or a known word."""
    word = words[opener]
    if word in _EDIT or word in _DETERMINERS or word in _COMPARING or _file(word):
        return False
    if word in _SUBORDINATE or word in _FINITE or word in _KEEPING or word in _PRONOUNS:
        return False
    if word in ("tell", "report", "ask", "note", "i", "we", "you", "there", "here"):
        return False
    return at - opener <= 3 and word.isalpha()
