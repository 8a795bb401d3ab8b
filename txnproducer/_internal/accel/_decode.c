/*
 * txnproducer._internal.accel._decode: the compiled record batch decoder (optional).
 *
 * Why C: a read_committed consumer's CPU per record is decoding: varints, two bytes objects and a
 * record tuple per record. In Python that is a few microseconds a record; here it is the object
 * allocations and little else (benchmarks/README.md). The reference is the pure-Python decoder,
 * txnproducer/_internal/fetch/decoder.py (decode_pure): this file mirrors it rule for rule - the
 * walk over complete batches, the CRC-32C check, the read_committed filtering of aborted
 * transactions and control batches (the Java consumer's CompletedFetch), the skip below the fetch
 * offset, the next fetch offset - and tests/unit/test_record_decoding.py compares the two on random
 * and edge inputs, batch for batch.
 *
 * Why a module of its own beside _speedups.c: the send path and the read path share nothing but
 * the CRC-32C, and one compile unit each keeps either file readable. The CRC-32C code is a copy of
 * _speedups.c's (the same table and SSE4.2 instruction), so that neither module needs the other.
 *
 * decode(data, fetch_offset, aborted, topic, partition, columns) returns
 * (records, next_offset, last_epoch, error_offset, error_reason): records is a list of the
 * configured record type (a tuple subclass: ConsumerRecord) or, with columns, the raw columns
 * (offsets, timestamps, timestamp types, leader epochs, keys, key starts, key lengths, values,
 * value starts, value lengths, headers or None) as bytes objects in native byte order.
 * Decompression calls back into Python (decoder.decompress, kafka-python's codecs): the codec error type
 * it raises for data it cannot decompress (decoder.CodecError) makes the batch unreadable; anything else
 * it raises (MemoryError, KeyboardInterrupt, a missing codec's ConfigError) propagates.
 *
 * Integers are read as the Java client reads them (ByteUtils): record lengths, offset deltas, key, value
 * and header lengths and header counts are int32 varints of at most 5 bytes (the 5th byte's bits past
 * the 32nd dropped, a 6th byte an error), the timestamp delta an int64 varlong of at most 10 bytes (bits
 * past the 64th dropped). Offsets and timestamps add as Java's longs do, wrapping at 2**63 (computed on
 * uint64_t: signed overflow is undefined in C). Bounds are checked as "length > end - pos" (never
 * "pos + length > end", which could overflow). A negative key, value or header value length is null, as
 * in Java (stored as -1 in the columns); a header key that is not UTF-8 is decoded with U+FFFD
 * replacements, as Java's new String(bytes, UTF_8) does, not refused.
 *
 * Everything runs holding the GIL; the input buffer is held (PyObject_GetBuffer) for the call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- CRC-32C (Castagnoli) */

#include "crc32c.h"

/* ---------------------------------------------------------------- module state */

static PyTypeObject *record_type = NULL; /* ConsumerRecord: a tuple subclass of 9 fields */
static PyObject *decompress_fn = NULL;   /* decoder.decompress(codec, bytes) -> bytes */
static PyObject *codec_error = NULL;     /* decoder.CodecError: what decompress raises for bad data */
static PyObject *no_headers = NULL;      /* records.NO_HEADERS: the shared empty headers */
static Py_ssize_t column_limit = INT32_MAX; /* the largest key/value start a column can hold (int32) */
static PyObject *small_ints[2];          /* 0, 1: timestamp types */

#define HEADER_SIZE 61
#define CRC_FROM 21
#define CODEC_MASK 0x07
#define LOG_APPEND_TIME 0x08
#define TRANSACTIONAL 0x10
#define CONTROL 0x20
#define RECORD_FIELDS 9
/* decoder.py's _COLUMNS_TOO_LARGE: the same words from both decoders */
#define COLUMNS_TOO_LARGE                                                                                      \
    "the keys or values of one partition's fetched records pass 2 GiB, past what a column's int32 starts can " \
    "address: read this partition with poll() (records) instead of poll_batch()"

static inline int64_t
be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

static inline int32_t
be32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3]);
}

static inline int16_t
be16(const unsigned char *p)
{
    return (int16_t)((uint16_t)p[0] << 8 | (uint16_t)p[1]);
}

/* Java's ByteUtils.readVarint: a zig-zag int32 varint of at most 5 bytes at *pos (below end). The 5th
 * byte's bits past the 32nd are dropped as Java's int shift drops them; a 5th byte with its continuation
 * bit set is an error. 0 on success, -1 when it runs past end or is too long. */
static inline int
read_varint32(const unsigned char *b, Py_ssize_t end, Py_ssize_t *pos, int32_t *out)
{
    Py_ssize_t p = *pos;
    if (p < end && b[p] < 0x80) { /* the common one-byte case first */
        unsigned char c = b[p];
        *out = (int32_t)(c >> 1) ^ -(int32_t)(c & 1);
        *pos = p + 1;
        return 0;
    }
    uint32_t v = 0;
    for (int shift = 0;; shift += 7) {
        if (p >= end)
            return -1;
        unsigned char c = b[p++];
        if (shift == 28) {
            if (c & 0x80)
                return -1;
            v |= (uint32_t)c << 28; /* truncated to 32 bits: uint32_t arithmetic */
            break;
        }
        v |= (uint32_t)(c & 0x7F) << shift;
        if (c < 0x80)
            break;
    }
    *out = (int32_t)(v >> 1) ^ -(int32_t)(v & 1);
    *pos = p;
    return 0;
}

/* Java's ByteUtils.readVarlong: a zig-zag int64 varint of at most 10 bytes; bits past the 64th dropped. */
static inline int
read_varlong(const unsigned char *b, Py_ssize_t end, Py_ssize_t *pos, int64_t *out)
{
    Py_ssize_t p = *pos;
    if (p < end && b[p] < 0x80) {
        unsigned char c = b[p];
        *out = (int64_t)(c >> 1) ^ -(int64_t)(c & 1);
        *pos = p + 1;
        return 0;
    }
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        if (shift > 63 || p >= end)
            return -1;
        unsigned char c = b[p++];
        v |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80)
            break;
    }
    *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    *pos = p;
    return 0;
}

/* Java's long addition: wraps at 2**63 (as unsigned, which C defines). */
static inline int64_t
add64(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* ---------------------------------------------------------------- growable buffers (columns) */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
} Buf;

static int
buf_reserve(Buf *b, Py_ssize_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    char *d = PyMem_Realloc(b->data, (size_t)cap);
    if (d == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = d;
    b->cap = cap;
    return 0;
}

static inline int
buf_put(Buf *b, const void *p, Py_ssize_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    if (n)
        memcpy(b->data + b->len, p, (size_t)n);
    b->len += n;
    return 0;
}

enum { C_OFFSETS, C_TIMESTAMPS, C_TYPES, C_EPOCHS, C_KEYS, C_KEY_STARTS, C_KEY_LENS, C_VALUES, C_VALUE_STARTS,
       C_VALUE_LENS, C_COUNT };

typedef struct {
    Buf b[C_COUNT];
    PyObject *headers; /* list aligned with the records once one has headers, else NULL */
    Py_ssize_t n;
} Columns;

static void
columns_free(Columns *c)
{
    for (int i = 0; i < C_COUNT; i++)
        PyMem_Free(c->b[i].data);
    Py_CLEAR(c->headers);
}

static PyObject *
columns_raw(Columns *c)
{
    PyObject *t = PyTuple_New(C_COUNT + 1);
    if (t == NULL)
        return NULL;
    for (int i = 0; i < C_COUNT; i++) {
        PyObject *bytes = PyBytes_FromStringAndSize(c->b[i].data ? c->b[i].data : "", c->b[i].len);
        if (bytes == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, bytes);
    }
    PyObject *h = c->headers ? c->headers : Py_None;
    Py_INCREF(h);
    PyTuple_SET_ITEM(t, C_COUNT, h);
    return t;
}

/* ---------------------------------------------------------------- the walk */

typedef struct {
    const char *reason; /* set (static text) or reason_obj set: the batch is corrupt */
    PyObject *reason_obj;
} Verdict;

#define CORRUPT(text) do { v->reason = (text); return 1; } while (0)

/* Parse one record's headers into a list of (str, bytes|None) (only checked when !make); *out NULL when
 * there are none. Returns 0, 1 (corrupt: v set) or -1 (Python error). */
static int
read_headers(const unsigned char *b, Py_ssize_t rec_end, Py_ssize_t *pos, int32_t n, PyObject **out, Verdict *v,
             int make)
{
    *out = NULL;
    if (n == 0)
        return 0;
    if (n < 0 || n > rec_end - *pos)
        CORRUPT("a record declares a bad number of headers");
    PyObject *list = make ? PyList_New((Py_ssize_t)n) : NULL;
    if (make && list == NULL)
        return -1;
    for (int32_t i = 0; i < n; i++) {
        int32_t klen, vlen;
        if (read_varint32(b, rec_end, pos, &klen) < 0 || klen < 0 || klen > rec_end - *pos) {
            Py_XDECREF(list);
            CORRUPT("a header key does not fit its record");
        }
        Py_ssize_t key_at = *pos;
        *pos += klen;
        if (read_varint32(b, rec_end, pos, &vlen) < 0) {
            Py_XDECREF(list);
            CORRUPT("a header does not fit its record");
        }
        Py_ssize_t value_at = *pos;
        if (vlen >= 0) {
            if (vlen > rec_end - *pos) {
                Py_XDECREF(list);
                CORRUPT("a header value does not fit its record");
            }
            *pos += vlen;
        }
        if (!make)
            continue;
        PyObject *name = PyUnicode_DecodeUTF8((const char *)b + key_at, klen, "replace");
        if (name == NULL) {
            Py_DECREF(list);
            return -1;
        }
        PyObject *value;
        if (vlen < 0) {
            value = Py_None;
            Py_INCREF(value);
        } else if ((value = PyBytes_FromStringAndSize((const char *)b + value_at, vlen)) == NULL) {
            Py_DECREF(name);
            Py_DECREF(list);
            return -1;
        }
        PyObject *pair = PyTuple_Pack(2, name, value);
        Py_DECREF(name);
        Py_DECREF(value);
        if (pair == NULL) {
            Py_DECREF(list);
            return -1;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, pair);
    }
    *out = list;
    return 0;
}

typedef struct {
    PyObject *topic;
    PyObject *partition;
    int64_t fetch_offset;
    int columns;
    PyObject *list;   /* records mode */
    Columns cols;     /* columns mode */
} Out;

static PyObject *
new_record(Out *o, int64_t offset, int64_t ts, int ttype, PyObject *epoch, PyObject *key, PyObject *value,
           PyObject *headers)
{
    PyObject *rec = record_type->tp_alloc(record_type, RECORD_FIELDS);
    if (rec == NULL)
        return NULL;
    PyObject *off = PyLong_FromLongLong(offset);
    PyObject *tso = PyLong_FromLongLong(ts);
    if (off == NULL || tso == NULL) {
        Py_XDECREF(off);
        Py_XDECREF(tso);
        Py_DECREF(rec);
        return NULL;
    }
    Py_INCREF(o->topic);
    PyTuple_SET_ITEM(rec, 0, o->topic);
    Py_INCREF(o->partition);
    PyTuple_SET_ITEM(rec, 1, o->partition);
    PyTuple_SET_ITEM(rec, 2, off);
    PyTuple_SET_ITEM(rec, 3, tso);
    Py_INCREF(small_ints[ttype]);
    PyTuple_SET_ITEM(rec, 4, small_ints[ttype]);
    PyTuple_SET_ITEM(rec, 5, key);
    PyTuple_SET_ITEM(rec, 6, value);
    PyTuple_SET_ITEM(rec, 7, headers);
    Py_INCREF(epoch);
    PyTuple_SET_ITEM(rec, 8, epoch);
    /* A record whose fields are all atoms (str, int, bytes, None, the shared empty headers) cannot be part
     * of a reference cycle: untracked, the cyclic GC does not walk it again and again while it lives (the
     * GC's passes over fresh records cost a third of a record's decode). CPython untracks such tuples
     * itself, but only once a collection has walked them. */
    if (headers == no_headers)
        PyObject_GC_UnTrack(rec);
    return rec;
}

/* Decode `count` records of a batch's (uncompressed) records. 0, 1 (corrupt: v set), -1 (error). */
static int
read_records(Out *o, const unsigned char *b, Py_ssize_t end, int32_t count, int64_t base_offset, int64_t first_ts,
             int64_t max_ts, int log_append, int32_t epoch, Verdict *v)
{
    Py_ssize_t pos = 0;
    int ttype = log_append ? 1 : 0;
    PyObject *epoch_obj = PyLong_FromLong(epoch);
    if (epoch_obj == NULL)
        return -1;
    int rc = 0;
    if (count < 0) {
        Py_DECREF(epoch_obj);
        v->reason = "a negative record count";
        return 1;
    }
    for (int32_t i = 0; i < count; i++) {
        int32_t length, off_delta, key_len, value_len, n_headers;
        int64_t ts_delta;
        if (read_varint32(b, end, &pos, &length) < 0) {
            v->reason = "its records cannot be read (a varint runs past its batch)";
            rc = 1;
            break;
        }
        if (length < 6 || length > end - pos) {
            v->reason = "a record's length does not fit its batch";
            rc = 1;
            break;
        }
        Py_ssize_t rec_end = pos + length;
        pos += 1; /* attributes */
        if (read_varlong(b, rec_end, &pos, &ts_delta) < 0 || read_varint32(b, rec_end, &pos, &off_delta) < 0
            || read_varint32(b, rec_end, &pos, &key_len) < 0) {
            v->reason = "a record's fields do not add up to its length";
            rc = 1;
            break;
        }
        Py_ssize_t key_at = pos;
        if (key_len > 0) {
            if (key_len > rec_end - pos) {
                v->reason = "a record's fields do not add up to its length";
                rc = 1;
                break;
            }
            pos += key_len;
        }
        if (read_varint32(b, rec_end, &pos, &value_len) < 0) {
            v->reason = "a record's fields do not add up to its length";
            rc = 1;
            break;
        }
        Py_ssize_t value_at = pos;
        if (value_len > 0) {
            if (value_len > rec_end - pos) {
                v->reason = "a record's fields do not add up to its length";
                rc = 1;
                break;
            }
            pos += value_len;
        }
        if (read_varint32(b, rec_end, &pos, &n_headers) < 0) {
            v->reason = "a record's fields do not add up to its length";
            rc = 1;
            break;
        }
        int64_t offset = add64(base_offset, off_delta);
        int wanted = offset >= o->fetch_offset;
        PyObject *headers = NULL;
        rc = read_headers(b, rec_end, &pos, n_headers, &headers, v, wanted);
        if (rc != 0)
            break;
        if (pos != rec_end) {
            Py_XDECREF(headers);
            v->reason = "a record's fields do not add up to its length";
            rc = 1;
            break;
        }
        if (!wanted) {
            Py_XDECREF(headers);
            continue;
        }
        if (key_len < 0)
            key_len = -1; /* any negative length is null (Java); the columns say -1 */
        if (value_len < 0)
            value_len = -1;
        int64_t ts = log_append ? max_ts : add64(first_ts, ts_delta);
        if (o->columns) {
            Columns *c = &o->cols;
            if (c->b[C_KEYS].len > column_limit || c->b[C_VALUES].len > column_limit) {
                Py_XDECREF(headers);
                PyErr_SetString(PyExc_OverflowError, COLUMNS_TOO_LARGE);
                rc = -1;
                break;
            }
            int32_t ks = (int32_t)c->b[C_KEYS].len, kl = key_len;
            int32_t vs = (int32_t)c->b[C_VALUES].len, vl = value_len;
            int8_t tt = (int8_t)ttype;
            if (buf_put(&c->b[C_OFFSETS], &offset, 8) < 0 || buf_put(&c->b[C_TIMESTAMPS], &ts, 8) < 0
                || buf_put(&c->b[C_TYPES], &tt, 1) < 0 || buf_put(&c->b[C_EPOCHS], &epoch, 4) < 0
                || buf_put(&c->b[C_KEY_STARTS], &ks, 4) < 0 || buf_put(&c->b[C_KEY_LENS], &kl, 4) < 0
                || buf_put(&c->b[C_KEYS], b + key_at, key_len > 0 ? key_len : 0) < 0
                || buf_put(&c->b[C_VALUE_STARTS], &vs, 4) < 0 || buf_put(&c->b[C_VALUE_LENS], &vl, 4) < 0
                || buf_put(&c->b[C_VALUES], b + value_at, value_len > 0 ? value_len : 0) < 0) {
                Py_XDECREF(headers);
                rc = -1;
                break;
            }
            if (headers != NULL && c->headers == NULL) {
                c->headers = PyList_New(0);
                for (Py_ssize_t k = 0; c->headers != NULL && k < c->n; k++)
                    if (PyList_Append(c->headers, no_headers) < 0)
                        Py_CLEAR(c->headers);
                if (c->headers == NULL) {
                    Py_DECREF(headers);
                    rc = -1;
                    break;
                }
            }
            if (c->headers != NULL) {
                int err = PyList_Append(c->headers, headers ? headers : no_headers);
                Py_XDECREF(headers);
                if (err < 0) {
                    rc = -1;
                    break;
                }
            }
            c->n++;
            continue;
        }
        PyObject *key, *value;
        if (key_len < 0) {
            key = Py_None;
            Py_INCREF(key);
        } else if ((key = PyBytes_FromStringAndSize((const char *)b + key_at, key_len)) == NULL) {
            Py_XDECREF(headers);
            rc = -1;
            break;
        }
        if (value_len < 0) {
            value = Py_None;
            Py_INCREF(value);
        } else if ((value = PyBytes_FromStringAndSize((const char *)b + value_at, value_len)) == NULL) {
            Py_DECREF(key);
            Py_XDECREF(headers);
            rc = -1;
            break;
        }
        if (headers == NULL) {
            headers = no_headers;
            Py_INCREF(headers);
        }
        PyObject *rec = new_record(o, offset, ts, ttype, epoch_obj, key, value, headers);
        if (rec == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            rc = -1;
            break;
        }
        int err = PyList_Append(o->list, rec);
        Py_DECREF(rec);
        if (err < 0) {
            rc = -1;
            break;
        }
    }
    Py_DECREF(epoch_obj);
    if (rc == 0 && pos != end) {
        v->reason = "bytes after the last of its records";
        rc = 1;
    }
    return rc;
}

/* Whether a control batch's first record is an ABORT marker: 1 yes, 0 no, 2 corrupt (v set). The key is
 * (int16 version, int16 type), as Java's ControlRecordType.parse reads it: at least 4 bytes, a version
 * >= 0. */
static int
is_abort_marker(const unsigned char *b, Py_ssize_t end, Verdict *v)
{
    Py_ssize_t pos = 0;
    int32_t length, off, key_len;
    int64_t ts;
    if (read_varint32(b, end, &pos, &length) < 0 || end - pos < 1)
        goto corrupt;
    pos += 1;
    if (read_varlong(b, end, &pos, &ts) < 0 || read_varint32(b, end, &pos, &off) < 0
        || read_varint32(b, end, &pos, &key_len) < 0)
        goto corrupt;
    if (key_len < 4) {
        v->reason = "a control record without its type";
        return 2;
    }
    if (key_len > end - pos)
        goto corrupt;
    if (be16(b + pos) < 0) {
        v->reason = "a control record of a negative version";
        return 2;
    }
    return be16(b + pos + 2) == 0;
corrupt:
    v->reason = "its records cannot be read (a control record runs past its batch)";
    return 2;
}

/* Reserve the columns for every record the complete batches declare (their headers' counts) and the
 * values for as many bytes as the answer holds: one allocation each instead of a doubling
 * realloc per buffer (measured: the reallocs' copies and page faults were most of a column decode). */
static int
presize(Columns *c, const unsigned char *b, Py_ssize_t end)
{
    Py_ssize_t pos = 0, n = 0;
    while (end - pos >= HEADER_SIZE) {
        int32_t length = be32(b + pos + 8);
        if (length < HEADER_SIZE - 12 || length > end - pos - 12)
            break;
        int32_t count = be32(b + pos + 57);
        if (count > 0)
            n += count;
        pos += 12 + length;
    }
    if (n > end)
        n = end; /* a record takes at least a byte: a lying header cannot make us reserve more */
    static const int widths[C_COUNT] = {8, 8, 1, 4, 0, 4, 4, 0, 4, 4};
    for (int i = 0; i < C_COUNT; i++) {
        Py_ssize_t want = i == C_VALUES ? end : widths[i] * n;
        if (want && buf_reserve(&c->b[i], want) < 0)
            return -1;
    }
    return 0;
}

typedef struct {
    int64_t pid;
    int64_t first_offset;
} Aborted;

static int
cmp_aborted(const void *a, const void *b)
{
    int64_t x = ((const Aborted *)a)->first_offset, y = ((const Aborted *)b)->first_offset;
    return (x > y) - (x < y);
}

static int
pid_in(const int64_t *pids, Py_ssize_t n, int64_t pid)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (pids[i] == pid)
            return 1;
    return 0;
}

/* The records of a batch compressed with `codec`, through decoder.decompress: 0 with *inflated a new
 * bytes object; 1 when the codec raised its error type (the batch cannot be read: v set); -1 when it
 * raised anything else (MemoryError, KeyboardInterrupt, a codec that is not installed): it propagates. */
static int
inflate(int codec, const unsigned char *body, Py_ssize_t body_len, PyObject **inflated, Verdict *v)
{
    *inflated = PyObject_CallFunction(decompress_fn, "iy#", codec, (const char *)body, body_len);
    if (*inflated != NULL) {
        if (PyBytes_Check(*inflated))
            return 0;
        Py_CLEAR(*inflated);
        PyErr_SetString(PyExc_TypeError, "decompress() did not return bytes");
        return -1;
    }
    if (codec_error == NULL || !PyErr_ExceptionMatches(codec_error))
        return -1;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (text == NULL)
        return -1;
    v->reason_obj = PyUnicode_FromFormat("it could not be decompressed: %U", text);
    Py_DECREF(text);
    return v->reason_obj == NULL ? -1 : 1;
}

/* One aborted transaction: any sequence of exactly (producer id, first offset), as the pure decoder
 * unpacks it (a list as well as a tuple). 0, or -1 with a Python error set. */
static int
aborted_entry(PyObject *item, Aborted *out)
{
    PyObject *pair = PySequence_Fast(item, "an aborted transaction must be (producer id, first offset)");
    if (pair == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "an aborted transaction must be (producer id, first offset)");
        }
        return -1;
    }
    int rc = -1;
    if (PySequence_Fast_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_ValueError, "an aborted transaction must be (producer id, first offset)");
    } else {
        long long pid = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(pair, 0));
        long long first = pid == -1 && PyErr_Occurred() ? -1 : PyLong_AsLongLong(PySequence_Fast_GET_ITEM(pair, 1));
        if (!PyErr_Occurred()) {
            out->pid = pid;
            out->first_offset = first;
            rc = 0;
        }
    }
    Py_DECREF(pair);
    return rc;
}

static PyObject *
mod_decode(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *data, *aborted_obj, *topic, *partition;
    long long fetch_offset;
    int columns;
    if (!PyArg_ParseTuple(args, "OLOOOp", &data, &fetch_offset, &aborted_obj, &topic, &partition, &columns))
        return NULL;
    if (record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_decode.configure() was not called");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *b = view.buf;
    Py_ssize_t end = view.len;

    int read_committed = aborted_obj != Py_None;
    Aborted *queue = NULL;
    Py_ssize_t n_queue = 0, q_at = 0;
    int64_t *pids = NULL;
    Py_ssize_t n_pids = 0, cap_pids = 0;
    PyObject *result = NULL;
    Verdict v = {NULL, NULL};
    Out o;
    memset(&o, 0, sizeof(o));
    o.topic = topic;
    o.partition = partition;
    o.fetch_offset = fetch_offset;
    o.columns = columns;
    if (!columns && (o.list = PyList_New(0)) == NULL)
        goto done;
    if (read_committed) {
        PyObject *seq = PySequence_Fast(aborted_obj, "aborted must be a sequence of (producer id, first offset)");
        if (seq == NULL)
            goto done;
        n_queue = PySequence_Fast_GET_SIZE(seq);
        queue = PyMem_Malloc(sizeof(Aborted) * (size_t)(n_queue ? n_queue : 1));
        if (queue == NULL) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n_queue; i++) {
            if (aborted_entry(PySequence_Fast_GET_ITEM(seq, i), &queue[i]) < 0) {
                Py_DECREF(seq);
                goto done;
            }
        }
        Py_DECREF(seq);
        /* stable for equal first offsets, as Python's sort (mergesort semantics are not needed: the
         * queue is only ever drained by first offset, and equal offsets all enter together) */
        qsort(queue, (size_t)n_queue, sizeof(Aborted), cmp_aborted);
    }

    if (columns && presize(&o.cols, b, end) < 0)
        goto done;
    int64_t next_offset = fetch_offset;
    int32_t last_epoch = -1;
    int64_t error_offset = -1;
    Py_ssize_t pos = 0;
    while (end - pos >= 12) {
        int64_t base_offset = be64(b + pos);
        int32_t length = be32(b + pos + 8);
        if (length > end - pos - 12)
            break; /* cut off by the fetch's size limit */
        Py_ssize_t batch_end = pos + 12 + length;
        if (length < HEADER_SIZE - 12) {
            v.reason = "a batch length is shorter than its header";
            error_offset = base_offset;
            break;
        }
        const unsigned char *h = b + pos;
        int32_t epoch = be32(h + 12);
        int8_t magic = (int8_t)h[16];
        uint32_t crc = (uint32_t)be32(h + 17);
        int16_t attributes = be16(h + 21);
        int32_t last_delta = be32(h + 23);
        int64_t first_ts = be64(h + 27), max_ts = be64(h + 35), pid = be64(h + 43);
        int32_t count = be32(h + 57);
        if (magic != 2) {
            v.reason = "an unsupported magic (only magic 2 record batches are read)";
            error_offset = base_offset;
            break;
        }
        if (crc32c(h + CRC_FROM, (size_t)(batch_end - pos - CRC_FROM)) != crc) {
            v.reason = "its CRC-32C does not match its contents";
            error_offset = base_offset;
            break;
        }
        int64_t last_offset = add64(base_offset, last_delta);
        int codec = attributes & CODEC_MASK;
        const unsigned char *body = h + HEADER_SIZE;
        Py_ssize_t body_len = batch_end - pos - HEADER_SIZE;
        PyObject *inflated = NULL;
        int control = attributes & CONTROL;
        int skip = 0, rc = 0;
        if (read_committed && pid >= 0) {
            while (q_at < n_queue && queue[q_at].first_offset <= last_offset) {
                if (!pid_in(pids, n_pids, queue[q_at].pid)) {
                    if (n_pids == cap_pids) {
                        Py_ssize_t cap = cap_pids ? cap_pids * 2 : 8;
                        int64_t *grown = PyMem_Realloc(pids, sizeof(int64_t) * (size_t)cap);
                        if (grown == NULL) {
                            PyErr_NoMemory();
                            goto done;
                        }
                        pids = grown;
                        cap_pids = cap;
                    }
                    pids[n_pids++] = queue[q_at].pid;
                }
                q_at++;
            }
            if (control) {
                /* Java's containsAbortMarker reads the first record (a negative count is invalid) */
                if (count < 0) {
                    v.reason = "a negative record count";
                    rc = 1;
                } else if (count && codec) {
                    rc = inflate(codec, body, body_len, &inflated, &v);
                }
                if (rc == 0 && count) {
                    int abort = is_abort_marker(inflated ? (const unsigned char *)PyBytes_AS_STRING(inflated) : body,
                                                inflated ? PyBytes_GET_SIZE(inflated) : body_len, &v);
                    if (abort == 2) {
                        rc = 1;
                    } else if (abort) {
                        for (Py_ssize_t i = 0; i < n_pids; i++) {
                            if (pids[i] == pid) {
                                pids[i] = pids[--n_pids];
                                break;
                            }
                        }
                    }
                }
            } else if ((attributes & TRANSACTIONAL) && pid_in(pids, n_pids, pid)) {
                skip = 1; /* an aborted transaction's batch: not even decompressed (Java reads past it) */
            }
        }
        if (rc == 0 && !control && !skip) {
            if (codec)
                rc = inflate(codec, body, body_len, &inflated, &v);
            if (rc == 0) {
                if (inflated != NULL) {
                    body = (const unsigned char *)PyBytes_AS_STRING(inflated);
                    body_len = PyBytes_GET_SIZE(inflated);
                }
                rc = read_records(&o, body, body_len, count, base_offset, first_ts, max_ts,
                                  (attributes & LOG_APPEND_TIME) != 0, epoch, &v);
            }
        }
        Py_XDECREF(inflated);
        if (rc < 0)
            goto done;
        if (rc > 0) {
            error_offset = base_offset;
            break;
        }
        int64_t after = add64(last_offset, 1);
        if (after > next_offset)
            next_offset = after;
        last_epoch = epoch;
        pos = batch_end;
    }

    PyObject *items = columns ? columns_raw(&o.cols) : (Py_INCREF(o.list), o.list);
    if (items == NULL)
        goto done;
    PyObject *reason;
    if (v.reason_obj != NULL) {
        reason = v.reason_obj;
        v.reason_obj = NULL;
    } else if (v.reason != NULL) {
        reason = PyUnicode_FromString(v.reason);
        if (reason == NULL) {
            Py_DECREF(items);
            goto done;
        }
    } else {
        reason = Py_None;
        Py_INCREF(reason);
    }
    result = Py_BuildValue("(NLiLN)", items, (long long)next_offset, (int)last_epoch, (long long)error_offset,
                           reason);
done:
    Py_XDECREF(v.reason_obj);
    PyBuffer_Release(&view);
    PyMem_Free(queue);
    PyMem_Free(pids);
    Py_XDECREF(o.list);
    columns_free(&o.cols);
    return result;
}

static PyObject *
mod_configure(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"record_type", "decompress", "no_headers", "codec_error", "column_limit", NULL};
    PyObject *rtype, *decompress, *empty, *error_type = NULL;
    Py_ssize_t limit = INT32_MAX;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|On", names, &rtype, &decompress, &empty, &error_type,
                                     &limit))
        return NULL;
    if (!PyType_Check(rtype) || !PyType_IsSubtype((PyTypeObject *)rtype, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a tuple subclass (a NamedTuple)");
        return NULL;
    }
    if (error_type != NULL && error_type != Py_None && !PyExceptionClass_Check(error_type)) {
        PyErr_SetString(PyExc_TypeError, "codec_error must be an exception class");
        return NULL;
    }
    if (limit < 0 || limit > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "column_limit must be between 0 and 2**31 - 1");
        return NULL;
    }
    Py_INCREF(rtype);
    Py_XSETREF(record_type, (PyTypeObject *)rtype);
    Py_INCREF(decompress);
    Py_XSETREF(decompress_fn, decompress);
    Py_INCREF(empty);
    Py_XSETREF(no_headers, empty);
    Py_XSETREF(codec_error, error_type == Py_None ? NULL : Py_XNewRef(error_type));
    column_limit = limit;
    Py_RETURN_NONE;
}

static PyObject *
mod_crc_implementation(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(arg))
{
#ifdef HAVE_HW_CRC
    return PyUnicode_FromString(use_hw_crc ? "sse4.2" : "table");
#else
    return PyUnicode_FromString("table");
#endif
}

/*
 * split(buffer, starts, lengths) -> list of bytes (None where a length is -1): a BytesColumn's items
 * (the keys or values of a PartitionBatch) as objects, in one call. records.py's BytesColumn.to_list
 * is the reference (a list comprehension of slices); this is its loop without the interpreter, for
 * a batch transform that wants every value as bytes.
 */
static PyObject *
mod_split(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *buf_obj, *starts_obj, *lengths_obj;
    if (!PyArg_ParseTuple(args, "OOO", &buf_obj, &starts_obj, &lengths_obj))
        return NULL;
    Py_buffer buf, starts, lengths;
    if (PyObject_GetBuffer(buf_obj, &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(starts_obj, &starts, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&buf);
        return NULL;
    }
    if (PyObject_GetBuffer(lengths_obj, &lengths, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&starts);
        PyBuffer_Release(&buf);
        return NULL;
    }
    PyObject *out = NULL;
    if (starts.len != lengths.len || starts.len % (Py_ssize_t)sizeof(int32_t) != 0) {
        PyErr_SetString(PyExc_ValueError, "starts and lengths must be int32 arrays of one length");
        goto done;
    }
    Py_ssize_t n = starts.len / (Py_ssize_t)sizeof(int32_t);
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    const char *base = (const char *)buf.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t start, length;
        memcpy(&start, (const char *)starts.buf + i * (Py_ssize_t)sizeof(int32_t), sizeof(int32_t));
        memcpy(&length, (const char *)lengths.buf + i * (Py_ssize_t)sizeof(int32_t), sizeof(int32_t));
        PyObject *item;
        if (length < 0) {
            item = Py_None;
            Py_INCREF(item);
        } else if (start < 0 || (Py_ssize_t)start + (Py_ssize_t)length > buf.len) {
            PyErr_Format(PyExc_ValueError, "item %zd (start %d, length %d) is outside the buffer of %zd bytes",
                         i, (int)start, (int)length, buf.len);
            Py_CLEAR(out);
            goto done;
        } else {
            item = PyBytes_FromStringAndSize(base + start, length);
            if (item == NULL) {
                Py_CLEAR(out);
                goto done;
            }
        }
        PyList_SET_ITEM(out, i, item);
    }
done:
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&buf);
    return out;
}

static PyMethodDef module_methods[] = {
    {"split", mod_split, METH_VARARGS,
     "split(buffer, starts, lengths) -> list of bytes or None: a BytesColumn's items (see records.py)."},
    {"decode", mod_decode, METH_VARARGS,
     "decode(data, fetch_offset, aborted, topic, partition, columns) -> (records, next_offset, last_epoch, "
     "error_offset, error_reason); see txnproducer/_internal/fetch/decoder.py."},
    {"configure", (PyCFunction)(void (*)(void))mod_configure, METH_VARARGS | METH_KEYWORDS,
     "configure(record_type, decompress, no_headers, codec_error=None, column_limit=2**31-1): the Python "
     "objects the decoder builds with, the error decompress raises for data it cannot decompress, and the "
     "largest key/value start a column may hold (lowered by tests only)."},
    {"crc_implementation", mod_crc_implementation, METH_NOARGS, "'sse4.2' or 'table'."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef decode_module = {
    PyModuleDef_HEAD_INIT, "_decode",
    "Compiled record batch decoder of txnproducer (optional; see txnproducer._internal.accel).", -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__decode(void)
{
    crc_init();
#ifdef HAVE_HW_CRC
    __builtin_cpu_init();
    use_hw_crc = __builtin_cpu_supports("sse4.2");
#endif
    small_ints[0] = PyLong_FromLong(0);
    small_ints[1] = PyLong_FromLong(1);
    if (small_ints[0] == NULL || small_ints[1] == NULL)
        return NULL;
    return PyModule_Create(&decode_module);
}
