/* The common case of signatures._canonical_text, in C, for the compiled build.
 *
 * canonical_text(value, max_chars, output, verbatim, near) returns exactly what
 * signatures._canonical_text(value, max_chars, output, verbatim, near, native=False) (its
 * Python implementation) returns, or None when the value is outside the subset handled
 * here; the caller then runs the Python implementation, which stays the reference
 * (tests/test_native_signatures.py compares the two on the pinned inputs and on many
 * thousands of generated strings).
 *
 * The subset: a str of printable ASCII (0x20-0x7e: no tab, newline or other control
 * character, nothing non-ASCII) no longer than max_chars (so no rest digest), in which no
 * mask could apply. The mask screening is _ascii_mask's, reproduced exactly for call
 * arguments and as a superset for outputs (any tag word with a digit or "id" / "key" in
 * the text is left to Python). Code shapes (_code_shaped), free-text folding
 * (_fold_free_text with _IDENTIFIER_TOKEN) and the near key (_ascii_near_key) are
 * reproduced exactly: on that alphabet each of their regexes is a few character tests.
 *
 * Nothing here raises for a str: an argument of another type, a str subclass (whose
 * methods Python would call), an unconfigured module or a failed allocation give None.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------
 * filler words
 *
 * Python passes signatures._FILLER_WORDS in at import (configure()), so the list has one
 * source; until then canonical_text returns None. Kept as a C table sorted by length, for
 * lookups without building a str per word. */

#define FILLER_MAX_CHARS 24
#define FILLER_MAX_WORDS 512

typedef struct {
    unsigned char len;
    char text[FILLER_MAX_CHARS];
} FillerWord;

static FillerWord filler[FILLER_MAX_WORDS];
static int filler_count = -1; /* -1: not configured */
/* filler[by_len[n] .. by_len[n + 1]) are the words of n characters */
static int filler_by_len[FILLER_MAX_CHARS + 1];

static int
filler_order(const void *a, const void *b)
{
    const FillerWord *x = a, *y = b;
    if (x->len != y->len)
        return (int)x->len - (int)y->len;
    return memcmp(x->text, y->text, x->len);
}

static int
is_filler(const char *word, Py_ssize_t len)
{
    if (len >= FILLER_MAX_CHARS)
        return 0;
    for (int i = filler_by_len[len]; i < filler_by_len[len + 1]; i++) {
        if (filler[i].text[0] == word[0] && memcmp(filler[i].text, word, (size_t)len) == 0)
            return 1;
    }
    return 0;
}

static PyObject *
configure(PyObject *module, PyObject *words)
{
    /* Only words of lower-case ASCII letters and digits can equal a word of the near key
     * (a run of them, lower-cased); any other word is refused rather than silently
     * ignored, and the module stays unconfigured (canonical_text then returns None). */
    filler_count = -1; /* until every word is read: a failed call leaves none configured */
    PyObject *iterator = PyObject_GetIter(words);
    if (iterator == NULL)
        return NULL;
    static FillerWord fresh[FILLER_MAX_WORDS];
    int count = 0;
    PyObject *item;
    while ((item = PyIter_Next(iterator)) != NULL) {
        Py_ssize_t len = 0;
        const char *text = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &len) : NULL;
        int usable = text != NULL && len > 0 && len < FILLER_MAX_CHARS && count < FILLER_MAX_WORDS;
        for (Py_ssize_t i = 0; usable && i < len; i++) {
            char c = text[i];
            usable = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        }
        if (!usable) {
            Py_DECREF(item);
            Py_DECREF(iterator);
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError,
                            "filler words must be at most 23 lower-case ASCII letters or digits");
            return NULL;
        }
        fresh[count].len = (unsigned char)len;
        memcpy(fresh[count].text, text, (size_t)len);
        count++;
        Py_DECREF(item);
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred())
        return NULL;
    qsort(fresh, (size_t)count, sizeof(FillerWord), filler_order);
    memcpy(filler, fresh, sizeof(FillerWord) * (size_t)count);
    for (int n = 0, i = 0; n <= FILLER_MAX_CHARS; n++) {
        while (i < count && filler[i].len < n)
            i++;
        filler_by_len[n] = i;
    }
    filler_count = count;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------
 * character tests (ASCII only: every byte here is 0x20-0x7e) */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_letter(char c) { return is_upper(c) || is_lower(c); }
static int is_alnum(char c) { return is_letter(c) || is_digit(c); }
static int is_word(char c) { return is_alnum(c) || c == '_'; } /* \w on ASCII */
static int is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
/* "smun": a letter that ends a duration (_SHAPE_CLASSES' "s" class; lower case only) */
static int is_unit(char c) { return c == 's' || c == 'm' || c == 'u' || c == 'n'; }
static char to_lower(char c) { return is_upper(c) ? (char)(c + 32) : c; }

/* s[i], or 0 past the end (0 is never in the text) */
static char at(const char *s, Py_ssize_t n, Py_ssize_t i) { return i < n ? s[i] : 0; }

/* ------------------------------------------------------------------------------------
 * _code_shaped(raw), on printable ASCII (so no newline: its first test never applies, and
 * the only whitespace \s can match is the space) */

static int
code_shaped(const char *s, Py_ssize_t n)
{
    int calls = 1; /* whether a "(" after a letter, digit or "_" makes a call shape */
    int any_slash = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = s[i], next = at(s, n, i + 1);
        switch (c) {
        case '{':
        case '}':
        case '`':
            return 1;
        case '&':
        case '|':
            if (next == c) /* && || */
                return 1;
            /* _PIPE: \s(?:[|>]|>>|2>)\s, the "|" case */
            if (c == '|' && i > 0 && s[i - 1] == ' ' && next == ' ')
                return 1;
            break;
        case '>':
            /* _PIPE: " > ", " >> ", " 2> " */
            if (i > 0 && s[i - 1] == ' ' && (next == ' ' || (next == '>' && at(s, n, i + 2) == ' ')))
                return 1;
            if (i > 1 && s[i - 1] == '2' && s[i - 2] == ' ' && next == ' ')
                return 1;
            break;
        case ';': {
            /* _STATEMENT_END: ;(?:\S|\s*$) */
            Py_ssize_t j = i + 1;
            if (j < n && s[j] != ' ')
                return 1;
            while (j < n && s[j] == ' ')
                j++;
            if (j == n)
                return 1;
            break;
        }
        case '$':
            /* _SHELL_VARIABLE: \$[({\w] */
            if (next == '(' || next == '{' || is_word(next))
                return 1;
            break;
        case '(':
            /* a call, f( : _code_shaped's loop over the "(" stops at once when the first
             * one is at index 0, so then no "(" counts */
            if (i == 0)
                calls = 0;
            else if (calls && (is_alnum(s[i - 1]) || s[i - 1] == '_'))
                return 1;
            break;
        case '-':
            /* _FLAG: (?:^|\s)--?[A-Za-z] */
            if ((i == 0 || s[i - 1] == ' ')
                && (is_letter(next) || (next == '-' && is_letter(at(s, n, i + 2)))))
                return 1;
            break;
        case '/':
            any_slash = 1;
            break;
        default:
            break;
        }
    }
    if (!any_slash)
        return 0;
    /* raw.startswith(("./", "~/")) or " ./" in raw or " ~/" in raw */
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        if (s[i + 1] == '/' && (s[i] == '.' || s[i] == '~') && (i == 0 || s[i - 1] == ' '))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------
 * mask screening: 1 when a mask of _canonical_text could apply to head (lower its lower-case
 * form), so the value is left to Python */

/* Is needle (a literal) at lower + i? */
#define AT(lower, n, i, needle) \
    ((i) + (Py_ssize_t)sizeof(needle) - 1 <= (n) && memcmp((lower) + (i), needle, sizeof(needle) - 1) == 0)

/* In one pass over lower: does it hold "id" or "key", and a tag word (_has_tag_word's:
 * "req", "trace", "span", "correlation", "idempotency", "transaction", "txn")? */
static void
scan_tags(const char *lower, Py_ssize_t n, int *id_or_key, int *tag_word)
{
    *id_or_key = *tag_word = 0;
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        switch (lower[i]) {
        case 'i':
            *id_or_key |= lower[i + 1] == 'd';
            *tag_word |= AT(lower, n, i, "idempotency");
            break;
        case 'k':
            *id_or_key |= AT(lower, n, i, "key");
            break;
        case 'r':
            *tag_word |= AT(lower, n, i, "req");
            break;
        case 't':
            *tag_word |= AT(lower, n, i, "trace") || AT(lower, n, i, "transaction")
                         || AT(lower, n, i, "txn");
            break;
        case 's':
            *tag_word |= AT(lower, n, i, "span");
            break;
        case 'c':
            *tag_word |= AT(lower, n, i, "correlation");
            break;
        default:
            break;
        }
    }
}

static int
may_mask(const char *head, const char *lower, Py_ssize_t n, int output)
{
    int id_or_key, tag_word;
    scan_tags(lower, n, &id_or_key, &tag_word);
    int digit = 0;
    for (Py_ssize_t i = 0; i < n && !digit; i++)
        digit = is_digit(head[i]);
    if (!output) {
        /* _ascii_mask's call rules, exactly: a tagged id, or a timestamp (\d{4}-\d) */
        if (id_or_key && tag_word)
            return 1;
        for (Py_ssize_t i = 3; i + 2 < n; i++) {
            if (head[i + 1] == '-' && is_digit(head[i + 2]) && is_digit(head[i])
                && is_digit(head[i - 1]) && is_digit(head[i - 2]) && is_digit(head[i - 3]))
                return 1;
        }
        return 0;
    }
    /* outputs: without a digit only the tagged-id mask can apply (a tag word and "id" /
     * "key"); with one, _ascii_output_mask's screening. A tag word with a digit is left to
     * Python whatever else the text holds (a superset of its triggers). */
    if (tag_word && (id_or_key || digit))
        return 1;
    if (!digit)
        return 0;
    Py_ssize_t hex_run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = head[i];
        hex_run = is_hex(c) ? hex_run + 1 : 0;
        if (hex_run >= 8) /* [0-9a-fA-F]{8}: hex, and 8 digits (num) */
            return 1;
        if (!is_digit(c))
            continue;
        char next = at(head, n, i + 1), after = at(head, n, i + 2);
        if (is_unit(next) || next == 'x') /* "ds", "dx" */
            return 1;
        if (next == ' ' && is_unit(after)) /* "d s" */
            return 1;
        if ((next == ':' || next == '/') && is_digit(after)) /* "d:d", "d/d" */
            return 1;
        if (next == '-' && is_digit(after) && i >= 3 && is_digit(head[i - 1])
            && is_digit(head[i - 2]) && is_digit(head[i - 3])) /* "dddd-d" */
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------
 * _fold_free_text, one token (no space in it): 1 to lower-case it, 0 to keep it */

static int
fold_token(const char *t, Py_ssize_t n)
{
    /* Python lower-cases a word of letters capitalised or in capitals ("Pricing", "PLANS")
     * before trying the regex; the regex alone decides the same for ASCII (such a word
     * holds no lower-case letter followed by a capital), so it is all that is tested. */
    int upper = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        upper |= is_upper(t[i]);
    if (!upper) /* token.islower(), or no letter at all: lowering changes nothing */
        return 0;
    /* _IDENTIFIER_TOKEN: [/\\_@<]|\w[.:]\w|[a-z][A-Z]|\d */
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = t[i], next = at(t, n, i + 1);
        if (c == '/' || c == '\\' || c == '_' || c == '@' || c == '<' || is_digit(c))
            return 0;
        if (is_lower(c) && is_upper(next))
            return 0;
        if (is_word(c) && (next == '.' || next == ':') && is_word(at(t, n, i + 2)))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------
 * _ascii_near_key: the runs of letters and digits of lower, filler dropped, normalised
 * (_near_word_in_call / _near_word_in_output), de-duplicated, sorted, joined by spaces */

typedef struct {
    const char *text;
    Py_ssize_t len;
} Word;

static int
word_order(const void *a, const void *b)
{
    /* Python's str order; for ASCII the byte order, a prefix first */
    const Word *x = a, *y = b;
    Py_ssize_t common = x->len < y->len ? x->len : y->len;
    int diff = memcmp(x->text, y->text, (size_t)common);
    if (diff != 0)
        return diff;
    return (x->len > y->len) - (x->len < y->len);
}

static PyObject *
ascii_str(const char *text, Py_ssize_t len)
{
    PyObject *str = PyUnicode_New(len, 127);
    if (str != NULL && len > 0)
        memcpy(PyUnicode_1BYTE_DATA(str), text, (size_t)len);
    return str;
}

static PyObject *
near_key(const char *lower, Py_ssize_t n, int output, Word *words)
{
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n;) {
        if (!is_alnum(lower[i])) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        int digits = 1;
        while (i < n && is_alnum(lower[i])) {
            digits &= is_digit(lower[i]);
            i++;
        }
        const char *word = lower + start;
        Py_ssize_t len = i - start;
        if (is_filler(word, len)) /* looked up before normalising, as _NearWordMemo does */
            continue;
        if (digits) {
            if (output && len >= 6) { /* an id or counter of the moment */
                word = "#";
                len = 1;
            }
            else { /* leading zeros dropped, "0" kept */
                while (len > 1 && word[0] == '0') {
                    word++;
                    len--;
                }
            }
        }
        else if (len > 3 && word[len - 1] == 's' && word[len - 2] != 's') {
            len--; /* plural */
        }
        words[count].text = word;
        words[count].len = len;
        count++;
    }
    if (count > 16) {
        qsort(words, (size_t)count, sizeof(Word), word_order);
    }
    else { /* the usual few words: an insertion sort, without qsort's calls */
        for (Py_ssize_t i = 1; i < count; i++) {
            Word word = words[i];
            Py_ssize_t j = i;
            for (; j > 0 && word_order(&words[j - 1], &word) > 0; j--)
                words[j] = words[j - 1];
            words[j] = word;
        }
    }
    Py_ssize_t size = 0, unique = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (unique > 0 && word_order(&words[unique - 1], &words[i]) == 0)
            continue;
        words[unique++] = words[i];
        size += words[i].len + (unique > 1);
    }
    PyObject *key = PyUnicode_New(size, 127);
    if (key == NULL)
        return NULL;
    char *out = (char *)PyUnicode_1BYTE_DATA(key);
    for (Py_ssize_t i = 0; i < unique; i++) {
        if (i > 0)
            *out++ = ' ';
        memcpy(out, words[i].text, (size_t)words[i].len);
        out += words[i].len;
    }
    return key;
}

/* ------------------------------------------------------------------------------------
 * canonical_text */

static PyObject *
canonical_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "canonical_text(value, max_chars, output, verbatim, near) takes 5 arguments");
        return NULL;
    }
    PyObject *value = args[0];
    if (filler_count < 0 || !PyUnicode_CheckExact(value) || !PyLong_Check(args[1])
        || !PyBool_Check(args[2]) || !PyBool_Check(args[3]) || !PyBool_Check(args[4]))
        Py_RETURN_NONE;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(value) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
#endif
    Py_ssize_t max_chars = PyLong_AsSsize_t(args[1]);
    if (max_chars == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int output = args[2] == Py_True, verbatim = args[3] == Py_True, near = args[4] == Py_True;
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    if (!PyUnicode_IS_ASCII(value) || n > max_chars) /* another script; a rest digest */
        Py_RETURN_NONE;
    const char *raw = (const char *)PyUnicode_1BYTE_DATA(value);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (raw[i] < 0x20 || raw[i] == 0x7f) /* tabs, newlines: whitespace of other kinds */
            Py_RETURN_NONE;
    }

    /* one block: the folded head, its lower-case form, then the near key's words (at
     * most one per two characters, plus one) from a 16-byte boundary */
    size_t text_bytes = ((size_t)n * 2 + 15) & ~(size_t)15;
    size_t needed = text_bytes + sizeof(Word) * ((size_t)n / 2 + 1);
    /* on the stack for the usual short value (Word-aligned) */
    Word stack[(2 * 256 + sizeof(Word) * 129) / sizeof(Word) + 1];
    char *memory = needed <= sizeof(stack) ? (char *)stack : PyMem_Malloc(needed);
    if (memory == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    char *folded = memory, *lower = memory + n;
    Word *words = (Word *)(void *)(memory + text_bytes);
    PyObject *exact = NULL, *near_text = NULL, *result = NULL;

    /* head = " ".join(raw.split()): the only whitespace left is the space */
    Py_ssize_t size = 0;
    int space = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (raw[i] == ' ') {
            space = 1;
            continue;
        }
        if (space && size > 0)
            folded[size++] = ' ';
        space = 0;
        folded[size++] = raw[i];
    }
    if (!verbatim && code_shaped(raw, n))
        verbatim = 1;
    /* the head the masks, folding and near key read: raw when kept verbatim */
    const char *head = verbatim ? raw : folded;
    Py_ssize_t head_len = verbatim ? n : size;
    int any_upper = 0, any_space = 0;
    for (Py_ssize_t i = 0; i < head_len; i++) {
        lower[i] = to_lower(head[i]);
        any_upper |= is_upper(head[i]);
        any_space |= head[i] == ' ';
    }
    if (may_mask(head, lower, head_len, output))
        goto done; /* result stays None */

    if (!verbatim && any_space && any_upper) {
        /* _fold_free_text: some tokens lower-cased, in place in folded (head) */
        for (Py_ssize_t i = 0; i < head_len;) {
            Py_ssize_t end = i;
            while (end < head_len && folded[end] != ' ')
                end++;
            if (fold_token(folded + i, end - i))
                memcpy(folded + i, lower + i, (size_t)(end - i));
            i = end + 1;
        }
    }
    if (head_len == n && memcmp(head, raw, (size_t)n) == 0) {
        exact = value; /* unchanged: the caller's own string */
        Py_INCREF(exact);
    }
    else {
        exact = ascii_str(head, head_len);
        if (exact == NULL)
            goto fail;
    }
    if (!near)
        near_text = PyUnicode_New(0, 127);
    else if (verbatim && !output) { /* a verbatim argument's near key is its exact form */
        near_text = exact;
        Py_INCREF(near_text);
    }
    else
        near_text = near_key(lower, head_len, output, words);
    if (near_text == NULL)
        goto fail;
    result = PyTuple_New(2);
    if (result == NULL)
        goto fail;
    PyTuple_SET_ITEM(result, 0, exact);
    PyTuple_SET_ITEM(result, 1, near_text);
    if (memory != (char *)stack)
        PyMem_Free(memory);
    return result;

fail: /* out of memory: Python's own path will say so if it must */
    PyErr_Clear();
    Py_XDECREF(exact);
    Py_XDECREF(near_text);
done:
    if (memory != (char *)stack)
        PyMem_Free(memory);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"canonical_text", (PyCFunction)(void (*)(void))canonical_text, METH_FASTCALL,
     "canonical_text(value, max_chars, output, verbatim, near) -> (exact, near) or None.\n\n"
     "What signatures._canonical_text(..., native=False) returns, for printable ASCII text\n"
     "no longer than max_chars that no mask applies to; None for any other value."},
    {"configure", configure, METH_O,
     "configure(filler_words): the near key's filler words (signatures._FILLER_WORDS)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_native_signatures",
    "The common case of signatures._canonical_text in C (the compiled build only).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__native_signatures(void)
{
    return PyModule_Create(&module_def);
}
