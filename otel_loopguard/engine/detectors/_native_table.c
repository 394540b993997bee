/* The record moves of fingerprint_table.FingerprintTable, in C, for the compiled build.
 *
 * get, bump, insert and update each do what the method of the same name does in Python (the
 * reference: the method's own body, run whenever this module is missing or answers
 * NotImplemented), on the table's bytearray: find the key's record among the aligned
 * records of its set, move it to the front, read or write its little-endian values. Python
 * spends a few thousand instructions on that per call (a find, slices, a struct call); here
 * it is a scan of at most eight records and one memmove.
 *
 * Every function answers NotImplemented, before changing anything, for whatever is outside
 * the plain case: a buffer that is not an exact bytearray of the table's size, a key or a
 * value that is not an int in its field's range (Python raises struct.error then), a format
 * with other codes than H, I and Q. tests/test_native_table.py holds every answer and every
 * byte of the buffer to the Python body's.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_RECORD 64

typedef struct {
    unsigned char *buffer;
    Py_ssize_t start;  /* the first byte of the key's set */
    Py_ssize_t span;   /* bytes per set */
    Py_ssize_t record; /* bytes per record: the key's 4, then the values */
    uint32_t key;
    const char *codes; /* the value codes, e.g. "IHII" */
    Py_ssize_t ncodes;
} Table;

static Py_ssize_t
code_size(char code)
{
    switch (code) {
    case 'H':
        return 2;
    case 'I':
        return 4;
    case 'Q':
        return 8;
    default:
        return 0;
    }
}

/* A non-negative int below 2**bits, or -1 (no exception left set). */
static int
read_unsigned(PyObject *value, int bits, unsigned long long *out)
{
    if (!PyLong_Check(value))
        return -1;
    unsigned long long number = PyLong_AsUnsignedLongLong(value);
    if (number == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (bits < 64 && number >> bits)
        return -1;
    *out = number;
    return 0;
}

static Py_ssize_t
read_size(PyObject *value)
{
    if (!PyLong_CheckExact(value))
        return -1;
    Py_ssize_t number = PyLong_AsSsize_t(value);
    if (number == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return number;
}

/* (buffer, key, sets, span, codes) into *table; 0, or -1 for "not the plain case". */
static int
open_table(PyObject *const *args, Table *table)
{
    PyObject *buffer = args[0], *codes = args[4];
    unsigned long long key;
    if (!PyByteArray_CheckExact(buffer) || !PyBytes_CheckExact(codes))
        return -1;
    if (read_unsigned(args[1], 32, &key) < 0)
        return -1;
    Py_ssize_t sets = read_size(args[2]), span = read_size(args[3]);
    if (sets <= 0 || span <= 0)
        return -1;
    table->codes = PyBytes_AS_STRING(codes);
    table->ncodes = PyBytes_GET_SIZE(codes);
    Py_ssize_t record = 4;
    for (Py_ssize_t i = 0; i < table->ncodes; i++) {
        Py_ssize_t size = code_size(table->codes[i]);
        if (size == 0)
            return -1;
        record += size;
    }
    if (record > MAX_RECORD || span % record || PyByteArray_GET_SIZE(buffer) / span != sets ||
        PyByteArray_GET_SIZE(buffer) % span)
        return -1;
    table->buffer = (unsigned char *)PyByteArray_AS_STRING(buffer);
    table->key = (uint32_t)key;
    table->span = span;
    table->record = record;
    table->start = (Py_ssize_t)(key % (unsigned long long)sets) * span;
    return 0;
}

static void
write_le(unsigned char *at, unsigned long long value, Py_ssize_t size)
{
    for (Py_ssize_t i = 0; i < size; i++)
        at[i] = (unsigned char)(value >> (8 * i));
}

static unsigned long long
read_le(const unsigned char *at, Py_ssize_t size)
{
    unsigned long long value = 0;
    for (Py_ssize_t i = size - 1; i >= 0; i--)
        value = value << 8 | at[i];
    return value;
}

/* The offset of the key's record in its set (the first aligned match), or -1. */
static Py_ssize_t
find(const Table *table)
{
    unsigned char needle[4];
    write_le(needle, table->key, 4);
    for (Py_ssize_t at = table->start; at < table->start + table->span; at += table->record) {
        if (memcmp(table->buffer + at, needle, 4) == 0)
            return at;
    }
    return -1;
}

/* The record at ``at`` moved to the front of its set, the records before it one down. */
static void
to_front(const Table *table, Py_ssize_t at)
{
    unsigned char moved[MAX_RECORD];
    if (at == table->start)
        return;
    memcpy(moved, table->buffer + at, table->record);
    memmove(table->buffer + table->start + table->record, table->buffer + table->start,
            at - table->start);
    memcpy(table->buffer + table->start, moved, table->record);
}

/* values (a tuple, one per code) packed into packed; 0, or -1 for "not the plain case". */
static int
pack_values(const Table *table, PyObject *values, unsigned char *packed)
{
    if (!PyTuple_CheckExact(values) || PyTuple_GET_SIZE(values) != table->ncodes)
        return -1;
    for (Py_ssize_t i = 0; i < table->ncodes; i++) {
        Py_ssize_t size = code_size(table->codes[i]);
        unsigned long long value;
        if (read_unsigned(PyTuple_GET_ITEM(values, i), (int)(8 * size), &value) < 0)
            return -1;
        write_le(packed, value, size);
        packed += size;
    }
    return 0;
}

static PyObject *
get(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Table table;
    if (nargs != 5 || open_table(args, &table) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t at = find(&table);
    if (at == -1)
        Py_RETURN_NONE;
    to_front(&table, at);
    PyObject *found = PyTuple_New(table.ncodes);
    if (found == NULL)
        return NULL;
    const unsigned char *field = table.buffer + table.start + 4;
    for (Py_ssize_t i = 0; i < table.ncodes; i++) {
        Py_ssize_t size = code_size(table.codes[i]);
        PyObject *value = PyLong_FromUnsignedLongLong(read_le(field, size));
        if (value == NULL) {
            Py_DECREF(found);
            return NULL;
        }
        PyTuple_SET_ITEM(found, i, value);
        field += size;
    }
    return found;
}

static PyObject *
bump(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Table table;
    if (nargs != 6 || open_table(args, &table) < 0 || table.ncodes != 1 ||
        table.codes[0] != 'H')
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t max_count = read_size(args[5]);
    if (max_count < 1 || max_count > 0xFFFF)
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t at = find(&table), count;
    if (at == -1) {
        count = 1;
        at = table.start + table.span - table.record; /* evict the set's least recently used */
    }
    else {
        count = (Py_ssize_t)read_le(table.buffer + at + 4, 2);
        count = (count < max_count - 1 ? count : max_count - 1) + 1;
    }
    if (at != table.start)
        memmove(table.buffer + table.start + table.record, table.buffer + table.start,
                at - table.start);
    write_le(table.buffer + table.start, table.key, 4);
    write_le(table.buffer + table.start + 4, (unsigned long long)count, 2);
    return PyLong_FromSsize_t(count);
}

static PyObject *
insert(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Table table;
    unsigned char packed[MAX_RECORD];
    if (nargs != 6 || open_table(args, &table) < 0 || pack_values(&table, args[5], packed + 4) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    write_le(packed, table.key, 4);
    /* the set's last record (its least recently used) falls off */
    memmove(table.buffer + table.start + table.record, table.buffer + table.start,
            table.span - table.record);
    memcpy(table.buffer + table.start, packed, table.record);
    Py_RETURN_NONE;
}

static PyObject *
update(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Table table;
    unsigned char packed[MAX_RECORD];
    if (nargs != 6 || open_table(args, &table) < 0 || pack_values(&table, args[5], packed) < 0)
        Py_RETURN_NOTIMPLEMENTED;
    memcpy(table.buffer + table.start + 4, packed, table.record - 4);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"get", (PyCFunction)(void (*)(void))get, METH_FASTCALL,
     "get(buffer, key, sets, span, codes) -> values, None or NotImplemented.\n\n"
     "FingerprintTable.get on the table's parts (the key's record moved to the front)."},
    {"bump", (PyCFunction)(void (*)(void))bump, METH_FASTCALL,
     "bump(buffer, key, sets, span, codes, max_count) -> count or NotImplemented.\n\n"
     "FingerprintTable.bump on a table of format \"H\"."},
    {"insert", (PyCFunction)(void (*)(void))insert, METH_FASTCALL,
     "insert(buffer, key, sets, span, codes, values) -> None or NotImplemented.\n\n"
     "FingerprintTable.insert: the key's record written at the front of its set."},
    {"update", (PyCFunction)(void (*)(void))update, METH_FASTCALL,
     "update(buffer, key, sets, span, codes, values) -> None or NotImplemented.\n\n"
     "FingerprintTable.update: new values in the front record of the key's set."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_native_table",
    "FingerprintTable's record moves in C (the compiled build only).", -1, methods,
};

PyMODINIT_FUNC
PyInit__native_table(void)
{
    return PyModule_Create(&module_def);
}
