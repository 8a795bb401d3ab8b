/*
 * txnproducer._internal.accel._speedups: the compiled per-record path (optional).
 *
 * Why C: a record's trip through send() is a few dozen Python bytecodes of checks, a batch
 * encoder append, a lock and a future; under the GIL every microsecond of it is lost throughput
 * (benchmarks/README.md has the numbers that chose a hand-written extension over mypyc). The
 * pure-Python modules stay the reference: this file mirrors them rule for rule, and every rule it
 * does not handle (serializers, headers, a custom partitioner without an explicit partition, a
 * partition's first record, a full batch, memory waits, errors) is left to them by returning None
 * before anything changed. A record that starts a batch (each transaction's first record of a
 * partition) is started by Appender.start, a copy of RecordAccumulator.try_new_batch (the
 * accumulator's accounting: memory, the incomplete batches, the Sender's wake-up rule), or by
 * try_new_batch itself where start() is off (configure_start).
 *
 * What is here, and the Python it mirrors:
 *   crc32c()            kafka.record.util.calc_crc32c (SSE4.2 instruction when the CPU has it)
 *   murmur2()           kafka.partitioner.default.murmur2
 *   BatchEncoder        protocol/record_batch.py BatchEncoder (same bytes; tests compare)
 *   Appender            batching/accumulator.py RecordAccumulator.append, the open-batch case;
 *                       its start(): try_new_batch with _start_capacity and _start_batch, and
 *                       ProducerBatch.__init__ (batching/batch.py)
 *   SendPath            producer.py TransactionalProducer.send, the common case
 *
 * Why one file of ~1,800 lines (the project keeps Python modules under 600): one extension module
 * is one compile unit, and its parts share the helpers and the module state at the top.
 *
 * Thread safety: everything runs holding the GIL and never releases it except inside the
 * accumulator's lock acquire (a threading.Lock, taken exactly where the Python code takes it).
 *
 * Memory safety, held by `make test-asan` (this file built with AddressSanitizer and UBSan, the unit,
 * codec and producer tests and a differential fuzz of send() run against it):
 *   - a type is complete once made: each one is built in its tp_new from its arguments (no tp_init to
 *     skip or to run twice: Type.__new__(Type) is a TypeError), references are taken before anything
 *     can fail, and dealloc releases exactly what the object owns;
 *   - no pointer into a buffer is kept across a call into Python (the compress callback may run any
 *     code: BatchEncoder.build() copies from bytes it owns, and the encoder refuses appends meanwhile);
 *   - float timeouts are checked as floats before they become integers;
 *   - every buffer view taken is released on every path.
 * Objects of the Python classes (ProducerBatch, RecordFuture) are read and written through their
 * __slots__ member descriptors, resolved once at construction and checked for their kind; a class
 * whose slots differ from the expected ones is used through ordinary attribute access instead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "slots.h"


/* ---------------------------------------------------------------- CRC-32C (Castagnoli) */

#include "crc32c.h"

/* ---------------------------------------------------------------- helpers */

static inline int
zz_len(int64_t v)
{
    uint64_t n = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    int len = 1;
    while (n > 0x7F) {
        n >>= 7;
        len++;
    }
    return len;
}

static inline unsigned char *
put_zz(unsigned char *p, int64_t v)
{
    uint64_t n = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    while (n > 0x7F) {
        *p++ = (unsigned char)((n & 0x7F) | 0x80);
        n >>= 7;
    }
    *p++ = (unsigned char)n;
    return p;
}

static inline unsigned char *
put_be(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        p[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    return p + bytes;
}

/* A key, value or header block: None, or anything with the buffer protocol. */
typedef struct {
    const unsigned char *data;
    Py_ssize_t len;   /* -1: None */
    Py_buffer view;
    int has_view;
} Bytes;

static int
bytes_get(PyObject *obj, Bytes *out, const char *what)
{
    out->has_view = 0;
    if (obj == Py_None) {
        out->data = NULL;
        out->len = -1;
        return 0;
    }
    if (PyBytes_CheckExact(obj)) {
        out->data = (const unsigned char *)PyBytes_AS_STRING(obj);
        out->len = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyObject_GetBuffer(obj, &out->view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes-like or None, got %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    out->has_view = 1;
    out->data = (const unsigned char *)out->view.buf;
    out->len = out->view.len;
    return 0;
}

static void
bytes_release(Bytes *b)
{
    if (b->has_view) {
        PyBuffer_Release(&b->view);
        b->has_view = 0;
    }
}

static int
as_int64(PyObject *obj, int64_t *out, const char *what)
{
    if (!PyLong_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, got %.100s", what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)v;
    return 0;
}

#ifdef _WIN32
#include <windows.h>

static int64_t
now_ms(void)
{
    FILETIME ft;  /* what time.time_ns() reads: 100 ns units since 1601 */
    GetSystemTimePreciseAsFileTime(&ft);
    uint64_t t = ((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime;
    return (int64_t)((t - 116444736000000000ULL) / 10000);
}
#else
static int64_t
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);  /* what time.time_ns() reads */
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
#endif

/* ---------------------------------------------------------------- module state */

static PyObject *compress_fn = NULL;  /* record_batch._compress(codec, data, gzip_level) */
static PyObject *small_zero, *small_one, *small_minus1;  /* 0, 1 and -1, made once */

/* interned attribute names */
static PyObject *s_add_partition, *s_choose, *s_wakeup,
    *s_acquire, *s_release, *s_append,
    *s_memory_waiters, *s_used, *s_buffer_memory, *s_incomplete, *s_sender_looks_by;

/* ---------------------------------------------------------------- BatchEncoder */

#define HEADER_SIZE 61
#define CRC_OFFSET 17
#define ATTRIBUTES_OFFSET 21
#define AFTER_LEN_OFFSET 12
#define TRANSACTIONAL_MASK 0x10
#define CODEC_MASK 0x07

typedef struct {
    PyObject_HEAD
    unsigned char *buf;
    Py_ssize_t len;
    Py_ssize_t cap;
    Py_ssize_t batch_size;
    Py_ssize_t num_records;
    int64_t first_ts;
    int64_t max_ts;
    int64_t producer_id;
    int64_t producer_epoch;
    int64_t base_sequence;
    int codec;
    int gzip_level;
    int transactional;
    int building;  /* > 0 while build() runs the compress callback: the buffer must not change */
} EncoderObject;

static PyTypeObject EncoderType;

static PyObject *encoder_make(PyTypeObject *type, int codec, int transactional, Py_ssize_t batch_size,
                              long long pid, long long epoch, long long seq, int gzip_level);

/* BatchEncoder(compression_type, is_transactional, batch_size, producer_id=-1, producer_epoch=-1,
 * base_sequence=-1, gzip_level=-1): complete once made (see the top of the file). */
static PyObject *
encoder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"compression_type", "is_transactional", "batch_size", "producer_id",
                             "producer_epoch", "base_sequence", "gzip_level", NULL};
    int codec, transactional, gzip_level = -1;
    Py_ssize_t batch_size;
    long long pid = -1, epoch = -1, seq = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "ipn|LLLi:BatchEncoder", kwlist, &codec, &transactional,
                                     &batch_size, &pid, &epoch, &seq, &gzip_level))
        return NULL;
    return encoder_make(type, codec, transactional, batch_size, pid, epoch, seq, gzip_level);
}

/* A new encoder (what BatchEncoder(...) makes, without parsing arguments: the compiled start of a
 * batch makes one per batch). */
static PyObject *
encoder_make(PyTypeObject *type, int codec, int transactional, Py_ssize_t batch_size, long long pid,
             long long epoch, long long seq, int gzip_level)
{
    /* a batch is usually filled to batch_size: start there (bounded), double when needed */
    Py_ssize_t cap = batch_size < 256 ? 256 : batch_size > (1 << 20) ? (1 << 20) : batch_size;
    cap += HEADER_SIZE;
    unsigned char *buf = PyMem_Malloc(cap);
    if (buf == NULL)
        return PyErr_NoMemory();
    EncoderObject *self = (EncoderObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyMem_Free(buf);
        return NULL;
    }
    memset(buf, 0, HEADER_SIZE);
    self->buf = buf;
    self->cap = cap;
    self->len = HEADER_SIZE;
    self->codec = codec & CODEC_MASK;
    self->transactional = transactional;
    self->batch_size = batch_size;
    self->gzip_level = gzip_level;
    self->producer_id = pid;
    self->producer_epoch = epoch;
    self->base_sequence = seq;
    self->first_ts = -1;
    self->max_ts = 0;
    self->num_records = 0;
    self->building = 0;
    return (PyObject *)self;
}

static void
encoder_dealloc(EncoderObject *self)
{
    PyMem_Free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Append one record; the batch's new size, -1 when it does not fit, -2 on error. */
static Py_ssize_t
encoder_append_raw(EncoderObject *self, int64_t ts, Bytes *key, Bytes *value, Bytes *headers)
{
    if (self->building) {
        PyErr_SetString(PyExc_RuntimeError,
                        "BatchEncoder.append() called while its build() runs the compress callback");
        return -2;
    }
    Py_ssize_t offset = self->num_records;
    int64_t ts_delta = 0;
    if (offset) {
        int64_t first = self->first_ts;
        if ((first < 0 && ts > INT64_MAX + first) || (first > 0 && ts < INT64_MIN + first)) {
            PyErr_SetString(PyExc_OverflowError, "timestamp delta does not fit 64 bits");
            return -2;
        }
        ts_delta = ts - first;
    }
    Py_ssize_t body = 1 + zz_len(ts_delta) + zz_len(offset) + headers->len;
    body += key->len < 0 ? 1 : zz_len(key->len) + key->len;
    body += value->len < 0 ? 1 : zz_len(value->len) + value->len;
    Py_ssize_t total = zz_len(body) + body;
    if (offset) {
        if (total + self->len > self->batch_size)
            return -1;
    }
    if (self->len + total > self->cap) {
        Py_ssize_t cap = self->cap * 2;
        if (cap < self->len + total)
            cap = self->len + total;
        unsigned char *grown = PyMem_Realloc(self->buf, cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -2;
        }
        self->buf = grown;
        self->cap = cap;
    }
    unsigned char *p = self->buf + self->len;
    p = put_zz(p, body);
    *p++ = 0;  /* attributes */
    p = put_zz(p, ts_delta);
    p = put_zz(p, offset);
    if (key->len < 0) {
        *p++ = 1;  /* zig-zag -1: null */
    } else {
        p = put_zz(p, key->len);
        memcpy(p, key->data, key->len);
        p += key->len;
    }
    if (value->len < 0) {
        *p++ = 1;
    } else {
        p = put_zz(p, value->len);
        memcpy(p, value->data, value->len);
        p += value->len;
    }
    memcpy(p, headers->data, headers->len);
    if (offset) {
        if (ts > self->max_ts)
            self->max_ts = ts;
    } else {
        self->first_ts = ts;
        self->max_ts = ts;
    }
    self->len += total;
    self->num_records = offset + 1;
    return self->len;
}

static PyObject *
encoder_append(EncoderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "append(timestamp, key, value, headers_encoded)");
        return NULL;
    }
    int64_t ts;
    if (as_int64(args[0], &ts, "timestamp") < 0)
        return NULL;
    Bytes key, value, headers;
    if (bytes_get(args[1], &key, "key") < 0)
        return NULL;
    if (bytes_get(args[2], &value, "value") < 0) {
        bytes_release(&key);
        return NULL;
    }
    if (bytes_get(args[3], &headers, "headers_encoded") < 0 || headers.len < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "headers_encoded must be bytes");
        bytes_release(&key);
        bytes_release(&value);
        return NULL;
    }
    Py_ssize_t size = encoder_append_raw(self, ts, &key, &value, &headers);
    bytes_release(&key);
    bytes_release(&value);
    bytes_release(&headers);
    if (size == -2)
        return NULL;
    return PyLong_FromSsize_t(size);
}

static PyObject *
encoder_size(EncoderObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t(self->len);
}

static PyObject *
encoder_set_producer_state(EncoderObject *self, PyObject *args)
{
    long long pid, epoch, seq;
    int transactional;
    if (!PyArg_ParseTuple(args, "LLLp", &pid, &epoch, &seq, &transactional))
        return NULL;
    if (self->building) {
        PyErr_SetString(PyExc_RuntimeError,
                        "BatchEncoder.set_producer_state() called while its build() runs the compress callback");
        return NULL;
    }
    self->producer_id = pid;
    self->producer_epoch = epoch;
    self->base_sequence = seq;
    self->transactional = transactional;
    Py_RETURN_NONE;
}

static int
check_range(int64_t v, int64_t lo, int64_t hi, const char *what)
{
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_OverflowError, "%s %lld does not fit the batch header", what, (long long)v);
        return -1;
    }
    return 0;
}

static PyObject *
encoder_build(EncoderObject *self, PyObject *Py_UNUSED(ignored))
{
    if (check_range(self->producer_epoch, INT16_MIN, INT16_MAX, "producer epoch") < 0
        || check_range(self->base_sequence, INT32_MIN, INT32_MAX, "base sequence") < 0)
        return NULL;
    int attributes = self->transactional ? TRANSACTIONAL_MASK : 0;
    const unsigned char *payload = self->buf + HEADER_SIZE;
    Py_ssize_t payload_len = self->len - HEADER_SIZE;
    /* With a codec, the records are copied into ``data`` and the compress callback runs: Python code
     * that may do anything (append to this encoder and move its buffer, replace the callback). From
     * then on the payload comes from ``data`` or the compressed bytes, never from self->buf; the
     * encoder refuses appends meanwhile, so the header fields read below still describe it. */
    PyObject *data = NULL, *compressed = NULL;
    if (self->codec) {
        if (compress_fn == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "_speedups.configure(compress=...) was not called");
            return NULL;
        }
        data = PyBytes_FromStringAndSize((const char *)payload, payload_len);
        if (data == NULL)
            return NULL;
        PyObject *fn = Py_NewRef(compress_fn);  /* configure() may replace it during the call */
        self->building++;
        compressed = PyObject_CallFunction(fn, "iOi", self->codec, data, self->gzip_level);
        self->building--;
        Py_DECREF(fn);
        if (compressed == NULL) {
            Py_DECREF(data);
            return NULL;
        }
        if (!PyBytes_Check(compressed)) {
            Py_DECREF(compressed);
            Py_DECREF(data);
            PyErr_SetString(PyExc_TypeError, "compress must return bytes");
            return NULL;
        }
        if (PyBytes_GET_SIZE(compressed) < payload_len) {  /* only when it helps, as kafka-python */
            payload = (const unsigned char *)PyBytes_AS_STRING(compressed);
            payload_len = PyBytes_GET_SIZE(compressed);
            attributes |= self->codec;
        } else {
            payload = (const unsigned char *)PyBytes_AS_STRING(data);
        }
    }
    Py_ssize_t total = HEADER_SIZE + payload_len;
    PyObject *out = PyByteArray_FromStringAndSize(NULL, total);
    if (out != NULL)
        memcpy(PyByteArray_AS_STRING(out) + HEADER_SIZE, payload, payload_len);
    Py_XDECREF(compressed);
    Py_XDECREF(data);
    if (out == NULL)
        return NULL;
    unsigned char *b = (unsigned char *)PyByteArray_AS_STRING(out);
    int has = self->num_records > 0;
    unsigned char *p = b;
    p = put_be(p, 0, 8);                                   /* base offset */
    p = put_be(p, (uint32_t)(total - AFTER_LEN_OFFSET), 4);  /* batch length */
    p = put_be(p, 0, 4);                                   /* partition leader epoch */
    *p++ = 2;                                              /* magic */
    p = put_be(p, 0, 4);                                   /* CRC, below */
    p = put_be(p, (uint16_t)attributes, 2);
    p = put_be(p, (uint32_t)(has ? self->num_records - 1 : 0), 4);
    p = put_be(p, (uint64_t)(has ? self->first_ts : 0), 8);
    p = put_be(p, (uint64_t)(has ? self->max_ts : 0), 8);
    p = put_be(p, (uint64_t)self->producer_id, 8);
    p = put_be(p, (uint16_t)self->producer_epoch, 2);
    p = put_be(p, (uint32_t)self->base_sequence, 4);
    put_be(p, (uint32_t)self->num_records, 4);
    put_be(b + CRC_OFFSET, crc32c(b + ATTRIBUTES_OFFSET, total - ATTRIBUTES_OFFSET), 4);
    return out;
}

static PyObject *
encoder_get_num_records(EncoderObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->num_records);
}

static PyMethodDef encoder_methods[] = {
    {"append", (PyCFunction)(void (*)(void))encoder_append, METH_FASTCALL,
     "append(timestamp, key, value, headers_encoded) -> the batch's size with the record, or -1"},
    {"size", (PyCFunction)encoder_size, METH_NOARGS, "Bytes written so far (header included)."},
    {"set_producer_state", (PyCFunction)encoder_set_producer_state, METH_VARARGS,
     "set_producer_state(producer_id, producer_epoch, base_sequence, is_transactional)"},
    {"build", (PyCFunction)encoder_build, METH_NOARGS, "The batch: header, codec and CRC."},
    {NULL}
};

static PyMemberDef encoder_members[] = {
    {"batch_size", T_PYSSIZET, offsetof(EncoderObject, batch_size), 0, "capacity in bytes"},
    {NULL}
};

static PyGetSetDef encoder_getset[] = {
    {"num_records", (getter)encoder_get_num_records, NULL, "records appended", NULL},
    {NULL}
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "txnproducer._internal.accel._speedups.BatchEncoder",
    .tp_basicsize = sizeof(EncoderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Compiled magic-v2 batch encoder; the same bytes as protocol.record_batch.BatchEncoder.",
    .tp_new = encoder_new,
    .tp_dealloc = (destructor)encoder_dealloc,
    .tp_methods = encoder_methods,
    .tp_members = encoder_members,
    .tp_getset = encoder_getset,
};

/* ---------------------------------------------------------------- Mutex */

/* The accumulator's lock when the accelerator runs: a plain lock like threading.Lock (acquire,
 * release, the context manager; threading.Condition works on it), which the Appender takes
 * without a Python call (a method call on threading.Lock parses its arguments: ~300 instructions
 * per acquire). Blocking waits release the GIL, as threading.Lock's do. */
typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    int locked;
} MutexObject;

static PyTypeObject MutexType;

static PyObject *
mutex_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":Mutex", kwlist))
        return NULL;
    MutexObject *self = (MutexObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    return (PyObject *)self;
}

static void
mutex_dealloc(MutexObject *self)
{
    if (self->lock != NULL) {
        if (self->locked)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* 1 acquired, 0 timed out; ``timeout_us`` < 0 waits for ever. */
static int
mutex_lock(MutexObject *self, PY_TIMEOUT_T timeout_us)
{
    PyLockStatus r = PyThread_acquire_lock_timed(self->lock, 0, 0);
    if (r != PY_LOCK_ACQUIRED && timeout_us != 0) {
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(self->lock, timeout_us, 0);
        Py_END_ALLOW_THREADS
    }
    if (r != PY_LOCK_ACQUIRED)
        return 0;
    self->locked = 1;
    return 1;
}

static void
mutex_unlock(MutexObject *self)
{
    self->locked = 0;
    PyThread_release_lock(self->lock);
}

static PyObject *
mutex_acquire(MutexObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pd:acquire", kwlist, &blocking, &timeout))
        return NULL;
    /* Checked as a float, as threading.Lock checks it, before it becomes an integer: a float out of
     * the integer's range (inf, nan, 1e300) converts to an undefined value, which here was negative
     * ("wait for ever") where threading.Lock raises. */
    if (timeout != timeout) {
        PyErr_SetString(PyExc_ValueError, "Invalid value NaN (not a number)");
        return NULL;
    }
    if (timeout != -1 && (timeout < 0 ? -timeout : timeout) * 1e6 > (double)PY_TIMEOUT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
        return NULL;
    }
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    PY_TIMEOUT_T us = -1;
    if (!blocking) {
        us = 0;
    } else if (timeout >= 0) {
        double wanted = timeout * 1e6;  /* within PY_TIMEOUT_MAX: converts exactly, rounded up below */
        us = (PY_TIMEOUT_T)wanted;
        if ((double)us < wanted)
            us++;
    }
    return PyBool_FromLong(mutex_lock(self, us));
}

static PyObject *
mutex_release(MutexObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    mutex_unlock(self);
    Py_RETURN_NONE;
}

static PyObject *
mutex_enter(MutexObject *self, PyObject *Py_UNUSED(ignored))
{
    mutex_lock(self, -1);
    Py_RETURN_TRUE;
}

static PyObject *
mutex_exit(MutexObject *self, PyObject *const *Py_UNUSED(args), Py_ssize_t Py_UNUSED(nargs))
{
    return mutex_release(self, NULL);
}

static PyObject *
mutex_locked(MutexObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->locked);
}

static PyMethodDef mutex_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))mutex_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> bool"},
    {"release", (PyCFunction)mutex_release, METH_NOARGS, "release()"},
    {"locked", (PyCFunction)mutex_locked, METH_NOARGS, "locked() -> bool"},
    {"__enter__", (PyCFunction)mutex_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))mutex_exit, METH_FASTCALL, NULL},
    {NULL}
};

static PyTypeObject MutexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "txnproducer._internal.accel._speedups.Mutex",
    .tp_basicsize = sizeof(MutexObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A lock like threading.Lock that the compiled append takes without a Python call.",
    .tp_new = mutex_new,
    .tp_dealloc = (destructor)mutex_dealloc,
    .tp_methods = mutex_methods,
};

/* ---------------------------------------------------------------- Appender */

/* The Python classes' slots the per-record path touches (offsets; -1: not a plain slot). */
typedef struct {
    PyTypeObject *batch_type;
    Py_ssize_t b_full, b_builder, b_record_count;
    PyTypeObject *future_type;
    Py_ssize_t f_batch, f_index, f_timestamp, f_key_size, f_value_size, f_callbacks;
    int future_direct;  /* RecordFuture has exactly the slots above: fill them without __init__ */
} Layout;

typedef struct {
    PyObject_HEAD
    PyObject *acc;        /* the RecordAccumulator */
    PyObject *batches;    /* acc._batches: tp -> deque[ProducerBatch] */
    PyObject *mutex;      /* acc._mutex: a Mutex (taken directly), or a lock with acquire/release */
    PyObject *acquire;
    PyObject *release;
    Py_ssize_t full_at;
    int closed;           /* set by mark_closed() (RecordAccumulator.close(), under the lock) */
    /* the last partition appended to and its queue: records mostly go to the partition the record
     * before went to, and the accumulator never removes or replaces a partition's queue, so the
     * pair stays true (it spares a dict lookup, which hashes the TopicPartition tuple) */
    PyObject *last_tp;
    PyObject *last_dq;
    /* the last timestamp made into an int and that int: the records of one millisecond share it
     * (one allocation and one free less per record; ints are immutable) */
    int64_t last_ts;
    PyObject *last_ts_obj;
    Layout layout;
    /* start(): RecordAccumulator.try_new_batch, compiled; set up by configure_start() */
    int can_start;
    PyObject *start_reservation;  /* acc._start_reservation: tp -> int (the accumulator never replaces it) */
    PyObject *clock;              /* acc._clock: a new batch's ``created`` */
    PyObject *max_wait;           /* acc._max_wait_s (a float) */
    PyObject *zero_float;         /* 0.0: every new batch's retry_at and drained_at (floats are immutable) */
    PyObject *deque_type;         /* collections.deque: a partition's first queue */
    PyObject *no_headers;         /* NO_HEADERS_ENCODED */
    double linger_s;
    Py_ssize_t record_overhead, batch_header, max_record_total, first_reservation;
    int codec, gzip_level;
    Py_ssize_t b_slots[29];       /* ProducerBatch's slots, in BATCH_SLOTS' order */
} AppenderObject;

static PyTypeObject AppenderType;

static int
layout_init(Layout *l, PyObject *batch_type, PyObject *future_type)
{
    if (!PyType_Check(batch_type) || !PyType_Check(future_type)) {
        PyErr_SetString(PyExc_TypeError, "batch_type and future_type must be classes");
        return -1;
    }
    /* owned from here on, whatever fails below: the owner's dealloc releases them */
    l->batch_type = (PyTypeObject *)Py_NewRef(batch_type);
    l->future_type = (PyTypeObject *)Py_NewRef(future_type);
    l->b_full = slot_offset(l->batch_type, "full");
    l->b_builder = slot_offset(l->batch_type, "builder");
    l->b_record_count = slot_offset(l->batch_type, "record_count");
    if (l->b_full < 0 || l->b_builder < 0 || l->b_record_count < 0) {
        PyErr_SetString(PyExc_TypeError, "ProducerBatch lacks the slots full, builder, record_count");
        return -1;
    }
    l->f_batch = slot_offset(l->future_type, "_batch");
    l->f_index = slot_offset(l->future_type, "_index");
    l->f_timestamp = slot_offset(l->future_type, "_timestamp");
    l->f_key_size = slot_offset(l->future_type, "_key_size");
    l->f_value_size = slot_offset(l->future_type, "_value_size");
    l->f_callbacks = slot_offset(l->future_type, "_callbacks");
    l->future_direct = 0;
    if (l->f_batch >= 0 && l->f_index >= 0 && l->f_timestamp >= 0 && l->f_key_size >= 0
        && l->f_value_size >= 0 && l->f_callbacks >= 0 && l->future_type->tp_dictoffset == 0) {
        /* exactly these six slots, nothing more (a new slot would need its __init__ value) */
        PyObject *slots = PyObject_GetAttrString(future_type, "__slots__");
        if (slots == NULL)
            return -1;
        Py_ssize_t n = PySequence_Size(slots);
        Py_DECREF(slots);
        if (n < 0)
            return -1;
        l->future_direct = n == 6 && l->future_type->tp_base == &PyBaseObject_Type;
    }
    return 0;
}

/* ``index`` is the batch's record_count before the record (an int object: no new one is made) */
static PyObject *
new_future(Layout *l, PyObject *batch, PyObject *index, PyObject *timestamp, Py_ssize_t key_size,
           Py_ssize_t value_size)
{
    PyObject *pi = Py_NewRef(index);
    PyObject *pk = PyLong_FromSsize_t(key_size);
    PyObject *pv = PyLong_FromSsize_t(value_size);
    if (pi == NULL || pk == NULL || pv == NULL)
        goto fail;
    if (!l->future_direct) {
        PyObject *f = PyObject_CallFunctionObjArgs((PyObject *)l->future_type, batch, pi, timestamp,
                                                   pk, pv, NULL);
        Py_DECREF(pi);
        Py_DECREF(pk);
        Py_DECREF(pv);
        return f;
    }
    PyObject *f = l->future_type->tp_alloc(l->future_type, 0);
    if (f == NULL)
        goto fail;
    Py_INCREF(batch);
    SLOT(f, l->f_batch) = batch;
    SLOT(f, l->f_index) = pi;
    Py_INCREF(timestamp);
    SLOT(f, l->f_timestamp) = timestamp;
    SLOT(f, l->f_key_size) = pk;
    SLOT(f, l->f_value_size) = pv;
    Py_INCREF(Py_None);
    SLOT(f, l->f_callbacks) = Py_None;
    return f;
fail:
    Py_XDECREF(pi);
    Py_XDECREF(pk);
    Py_XDECREF(pv);
    return NULL;
}

/* Appender(accumulator, batches, mutex, full_at, batch_type, future_type): complete once made. */
static PyObject *
appender_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"accumulator", "batches", "mutex", "full_at", "batch_type", "future_type",
                             NULL};
    PyObject *acc, *batches, *mutex, *batch_type, *future_type;
    Py_ssize_t full_at;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OnOO:Appender", kwlist, &acc, &PyDict_Type, &batches,
                                     &mutex, &full_at, &batch_type, &future_type))
        return NULL;
    /* every field starts NULL: whatever fails below, dealloc releases exactly what was taken */
    AppenderObject *self = (AppenderObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->acc = Py_NewRef(acc);
    self->batches = Py_NewRef(batches);
    self->mutex = Py_NewRef(mutex);
    self->full_at = full_at;
    self->closed = 0;
    if (layout_init(&self->layout, batch_type, future_type) < 0
        || (self->acquire = PyObject_GetAttr(mutex, s_acquire)) == NULL
        || (self->release = PyObject_GetAttr(mutex, s_release)) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
appender_traverse(AppenderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->acc);
    Py_VISIT(self->batches);
    Py_VISIT(self->acquire);
    Py_VISIT(self->release);
    Py_VISIT(self->mutex);
    Py_VISIT(self->last_tp);
    Py_VISIT(self->last_dq);
    Py_VISIT(self->layout.batch_type);
    Py_VISIT(self->layout.future_type);
    Py_VISIT(self->start_reservation);
    Py_VISIT(self->clock);
    Py_VISIT(self->max_wait);
    Py_VISIT(self->deque_type);
    return 0;
}

static int
appender_clear(AppenderObject *self)
{
    Py_CLEAR(self->last_tp);
    Py_CLEAR(self->last_dq);
    Py_CLEAR(self->last_ts_obj);
    Py_CLEAR(self->acc);
    Py_CLEAR(self->batches);
    Py_CLEAR(self->acquire);
    Py_CLEAR(self->release);
    Py_CLEAR(self->mutex);
    Py_CLEAR(self->start_reservation);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->max_wait);
    Py_CLEAR(self->zero_float);
    Py_CLEAR(self->deque_type);
    Py_CLEAR(self->no_headers);
    self->can_start = 0;
    return 0;
}

static void
appender_dealloc(AppenderObject *self)
{
    PyObject_GC_UnTrack(self);
    appender_clear(self);
    /* the classes: references taken by layout_init (NULL if it never ran) */
    Py_XDECREF(self->layout.batch_type);
    Py_XDECREF(self->layout.future_type);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Take the accumulator's lock: the Mutex directly, any other lock through its acquire(). 0, or -1 with
 * an exception set (nothing taken). */
static int
appender_lock(AppenderObject *self)
{
    if (Py_IS_TYPE(self->mutex, &MutexType)) {
        mutex_lock((MutexObject *)self->mutex, -1);
        return 0;
    }
    PyObject *r = PyObject_CallNoArgs(self->acquire);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Release it, passing ``result`` (NULL: an exception is set, kept across release()) through; a
 * release() that fails drops ``result`` and answers NULL with its own exception. */
static PyObject *
appender_unlock(AppenderObject *self, PyObject *result)
{
    if (Py_IS_TYPE(self->mutex, &MutexType)) {
        mutex_unlock((MutexObject *)self->mutex);
        return result;
    }
    PyObject *exc_type, *exc_value, *exc_tb;
    PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
    PyObject *rr = PyObject_CallNoArgs(self->release);
    if (rr == NULL) {
        Py_XDECREF(exc_type);
        Py_XDECREF(exc_value);
        Py_XDECREF(exc_tb);
        Py_XDECREF(result);
        return NULL;
    }
    Py_DECREF(rr);
    PyErr_Restore(exc_type, exc_value, exc_tb);
    return result;
}

/* The open-batch case of RecordAccumulator.append. Returns the record's future and sets *wake,
 * or returns Py_None (a new reference) when the Python path must decide (no open batch, it is full,
 * the accumulator is closed, or a builder that is not ours); NULL on error. ``ts_obj`` may be NULL
 * (then ``ts`` is used). Nothing changes before a Py_None answer. */
static PyObject *
appender_append_raw(AppenderObject *self, PyObject *tp, int64_t ts, PyObject *ts_obj, Bytes *key,
                    Bytes *value, Bytes *headers, int *wake)
{
    Layout *l = &self->layout;
    if (appender_lock(self) < 0)
        return NULL;
    PyObject *result = NULL;
    /* the accumulator's closed flag, kept here (read under the same lock that close() holds when
     * it sets both): an attribute read per record cost ~20 ns */
    if (self->closed)
        goto python;
    PyObject *dq = self->last_dq;  /* borrowed */
    if (tp != self->last_tp || dq == NULL) {
        dq = PyDict_GetItemWithError(self->batches, tp);
        if (dq == NULL) {
            if (PyErr_Occurred())
                goto unlock;
            goto python;
        }
        Py_INCREF(tp);
        Py_XSETREF(self->last_tp, tp);
        Py_INCREF(dq);
        Py_XSETREF(self->last_dq, dq);
    }
    Py_ssize_t n = PySequence_Size(dq);
    if (n < 0)
        goto unlock;
    if (n == 0)
        goto python;
    PyObject *last = PySequence_GetItem(dq, n - 1);
    if (last == NULL)
        goto unlock;
    if (Py_TYPE(last) != l->batch_type) {
        Py_DECREF(last);
        goto python;
    }
    PyObject *full = SLOT(last, l->b_full);
    PyObject *builder = SLOT(last, l->b_builder);
    PyObject *count = SLOT(last, l->b_record_count);
    if (full != Py_False || builder == NULL || !Py_IS_TYPE(builder, &EncoderType) || count == NULL
        || !PyLong_CheckExact(count)) {
        Py_DECREF(last);
        goto python;
    }
    Py_ssize_t index = PyLong_AsSsize_t(count);
    if (index == -1 && PyErr_Occurred()) {
        Py_DECREF(last);
        goto unlock;
    }
    PyObject *new_count = PyLong_FromSsize_t(index + 1);
    PyObject *ts_own;
    if (ts_obj != NULL) {
        ts_own = Py_NewRef(ts_obj);
    } else if (self->last_ts_obj != NULL && self->last_ts == ts) {
        ts_own = Py_NewRef(self->last_ts_obj);
    } else {
        ts_own = PyLong_FromLongLong(ts);
        if (ts_own != NULL) {
            Py_XSETREF(self->last_ts_obj, Py_NewRef(ts_own));
            self->last_ts = ts;
        }
    }
    if (new_count == NULL || ts_own == NULL) {
        Py_XDECREF(new_count);
        Py_XDECREF(ts_own);
        Py_DECREF(last);
        goto unlock;
    }
    Py_ssize_t size = encoder_append_raw((EncoderObject *)builder, ts, key, value, headers);
    if (size < 0) {
        Py_DECREF(new_count);
        Py_DECREF(ts_own);
        Py_DECREF(last);
        if (size == -2)
            goto unlock;
        goto python;  /* does not fit: the Python path closes the batch and starts one */
    }
    Py_INCREF(count);  /* the future's index: the slot lets go of it */
    slot_set(last, l->b_record_count, new_count);
    PyObject *future = new_future(l, last, count, ts_own, key->len < 0 ? -1 : key->len,
                                  value->len < 0 ? -1 : value->len);
    Py_DECREF(count);
    Py_DECREF(ts_own);
    Py_DECREF(last);
    if (future == NULL)
        goto unlock;
    *wake = size >= self->full_at;
    result = future;
    goto unlock;
python:
    Py_INCREF(Py_None);
    result = Py_None;
unlock:
    return appender_unlock(self, result);
}

/* append(tp, timestamp_or_None, key, value, headers_encoded) -> (future, wake) or None */
static PyObject *
appender_call(AppenderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "append(tp, timestamp, key, value, headers_encoded)");
        return NULL;
    }
    int64_t ts;
    PyObject *ts_obj = args[1];
    if (ts_obj == Py_None) {
        ts = now_ms();
        ts_obj = NULL;
    } else if (as_int64(ts_obj, &ts, "timestamp") < 0) {
        return NULL;
    }
    Bytes key, value, headers;
    if (bytes_get(args[2], &key, "key") < 0)
        return NULL;
    if (bytes_get(args[3], &value, "value") < 0) {
        bytes_release(&key);
        return NULL;
    }
    if (bytes_get(args[4], &headers, "headers_encoded") < 0 || headers.len < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "headers_encoded must be bytes");
        bytes_release(&key);
        bytes_release(&value);
        return NULL;
    }
    int wake = 0;
    PyObject *out = appender_append_raw(self, args[0], ts, ts_obj, &key, &value, &headers, &wake);
    bytes_release(&key);
    bytes_release(&value);
    bytes_release(&headers);
    if (out == NULL || out == Py_None)
        return out;
    PyObject *pair = PyTuple_Pack(2, out, wake ? Py_True : Py_False);
    Py_DECREF(out);
    return pair;
}

/* ---- start(): a record that finds no open batch starts one (RecordAccumulator.try_new_batch) */

/* ProducerBatch's slots and the value its __init__ gives each in a new batch (batching/batch.py);
 * START_SET: filled from the arguments below. configure_start() turns the compiled start off unless
 * the class has exactly these slots (tests/unit/test_accumulator_compiled_start.py compares a batch
 * made here with one made by __init__, slot by slot). */
enum { START_NONE, START_FALSE, START_ZERO, START_MINUS1, START_ZERO_F, START_LIST, START_UNSET, START_SET };
static const struct { const char *name; int value; } BATCH_SLOTS[29] = {
    {"_done_event", START_NONE}, {"acknowledged_ns", START_UNSET}, {"attempts", START_ZERO},
    {"base_offset", START_MINUS1}, {"base_sequence", START_MINUS1}, {"buffer", START_NONE},
    {"builder", START_SET}, {"callback_futures", START_LIST}, {"created", START_SET},
    {"done_callbacks", START_NONE}, {"drained_at", START_ZERO_F}, {"exception", START_NONE},
    {"final_state", START_NONE}, {"full", START_FALSE}, {"in_flight", START_FALSE},
    {"log_append_time", START_NONE}, {"max_wait_s", START_SET}, {"parent", START_NONE},
    {"parts_pending", START_ZERO}, {"producer_epoch", START_MINUS1}, {"producer_id", START_MINUS1},
    {"record_count", START_SET}, {"record_errors", START_NONE}, {"reserved", START_SET},
    {"retry_at", START_ZERO_F}, {"sent_to", START_NONE}, {"sequence_reset", START_FALSE},
    {"split_into", START_NONE}, {"tp", START_SET},
};
#define N_BATCH_SLOTS ((int)(sizeof(BATCH_SLOTS) / sizeof(BATCH_SLOTS[0])))
enum { B_BUILDER = 6, B_CREATED = 8, B_MAX_WAIT = 16, B_RECORD_COUNT = 21, B_RESERVED = 23, B_TP = 28 };

/* configure_start(start_reservation, clock, max_wait_s, linger_s, record_overhead, batch_header_size,
 * max_record_total, first_reservation, codec, gzip_level, no_headers, deque_type, encoder) -> bool:
 * whether start() runs here (the accumulator's encoder is this module's BatchEncoder and ProducerBatch
 * has exactly the slots above); False leaves every start to try_new_batch. */
static PyObject *
appender_configure_start(AppenderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "configure_start() takes 13 arguments");
        return NULL;
    }
    Py_ssize_t ints[4];
    for (int i = 0; i < 4; i++) {
        ints[i] = PyLong_AsSsize_t(args[4 + i]);
        if (ints[i] == -1 && PyErr_Occurred())
            return NULL;
    }
    long codec = PyLong_AsLong(args[8]);
    long gzip_level = codec == -1 && PyErr_Occurred() ? -1 : PyLong_AsLong(args[9]);
    double linger_s = PyErr_Occurred() ? -1.0 : PyFloat_AsDouble(args[3]);
    if (PyErr_Occurred())
        return NULL;
    if (codec < 0 || codec > 7 || gzip_level < INT_MIN || gzip_level > INT_MAX) {
        PyErr_SetString(PyExc_ValueError, "configure_start(): codec or gzip_level out of range");
        return NULL;
    }
    if (!PyDict_CheckExact(args[0]) || !PyCallable_Check(args[1]) || !PyFloat_CheckExact(args[2])
        || !PyBytes_CheckExact(args[10]) || !PyType_Check(args[11])) {
        PyErr_SetString(PyExc_TypeError, "configure_start(): start_reservation must be a dict, clock "
                        "callable, max_wait_s a float, no_headers bytes, deque_type a class");
        return NULL;
    }
    self->can_start = 0;
    if (args[12] != (PyObject *)&EncoderType)
        Py_RETURN_FALSE;  /* the pure-Python encoder: try_new_batch starts every batch */
    PyTypeObject *bt = self->layout.batch_type;
    if (bt->tp_dictoffset != 0 || bt->tp_base != &PyBaseObject_Type)
        Py_RETURN_FALSE;
    PyObject *slots = PyObject_GetAttrString((PyObject *)bt, "__slots__");
    if (slots == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Size(slots);
    Py_DECREF(slots);
    if (n < 0)
        return NULL;
    if (n != N_BATCH_SLOTS)
        Py_RETURN_FALSE;  /* a slot this file does not know: its __init__ value is unknown here */
    for (int i = 0; i < N_BATCH_SLOTS; i++) {
        self->b_slots[i] = slot_offset(bt, BATCH_SLOTS[i].name);
        if (self->b_slots[i] < 0)
            Py_RETURN_FALSE;
    }
    PyObject *zero = PyFloat_FromDouble(0.0);
    if (zero == NULL)
        return NULL;
    Py_XSETREF(self->start_reservation, Py_NewRef(args[0]));
    Py_XSETREF(self->clock, Py_NewRef(args[1]));
    Py_XSETREF(self->max_wait, Py_NewRef(args[2]));
    Py_XSETREF(self->zero_float, zero);
    Py_XSETREF(self->no_headers, Py_NewRef(args[10]));
    Py_XSETREF(self->deque_type, Py_NewRef(args[11]));
    self->linger_s = linger_s;
    self->record_overhead = ints[0];
    self->batch_header = ints[1];
    self->max_record_total = ints[2];
    self->first_reservation = ints[3];
    self->codec = (int)codec;
    self->gzip_level = (int)gzip_level;
    self->can_start = 1;
    Py_RETURN_TRUE;
}

/* payload_size() of record_batch.py for one key or value: its bytes and their length's varint (as
 * that function counts it) */
static inline Py_ssize_t
start_field_size(Py_ssize_t n)
{
    if (n < 0)
        return 1;
    return n + (n < 64 ? 1 : n < 8192 ? 2 : n < 1048576 ? 3 : 5);
}

/* An int attribute of the accumulator as a Py_ssize_t; -1 with an exception set on error. */
static Py_ssize_t
start_int_attr(PyObject *acc, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(acc, name);
    if (v == NULL)
        return -1;
    Py_ssize_t n = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    if (n < 0 && !PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "RecordAccumulator.%U is negative", name);
    return n;
}

/* A new ProducerBatch as __init__ makes it, with its first record counted and ``capacity`` reserved
 * (every argument borrowed). */
static PyObject *
start_new_batch(AppenderObject *self, PyObject *tp, PyObject *builder, PyObject *created,
                PyObject *reserved)
{
    PyTypeObject *bt = self->layout.batch_type;
    PyObject *futures = PyList_New(0);
    if (futures == NULL)
        return NULL;
    PyObject *batch = bt->tp_alloc(bt, 0);
    if (batch == NULL) {
        Py_DECREF(futures);
        return NULL;
    }
    for (int i = 0; i < N_BATCH_SLOTS; i++) {
        PyObject *v;
        switch (BATCH_SLOTS[i].value) {
        case START_NONE: v = Py_None; break;
        case START_FALSE: v = Py_False; break;
        case START_ZERO: v = small_zero; break;
        case START_MINUS1: v = small_minus1; break;
        case START_ZERO_F: v = self->zero_float; break;
        case START_LIST: v = futures; break;
        case START_UNSET: continue;
        default:
            v = i == B_BUILDER ? builder : i == B_CREATED ? created : i == B_MAX_WAIT ? self->max_wait
                : i == B_RECORD_COUNT ? small_one : i == B_RESERVED ? reserved : tp;
        }
        SLOT(batch, self->b_slots[i]) = Py_NewRef(v);
    }
    Py_DECREF(futures);
    return batch;
}

/* CLOCK_MONOTONIC in seconds: what time.monotonic() reads. */
static double
monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The body of start(), with the accumulator's lock held: RecordAccumulator.try_new_batch,
 * _start_capacity and _start_batch, rule for rule. Returns (future, wake, full), Py_None (a new
 * reference: nothing changed, append() decides) or NULL with an exception set. */
static PyObject *
appender_start_locked(AppenderObject *self, PyObject *tp, int64_t ts, PyObject *ts_obj, Bytes *key,
                      Bytes *value)
{
    PyObject *acc = self->acc;
    if (self->closed)
        Py_RETURN_NONE;
    Py_ssize_t waiters = start_int_attr(acc, s_memory_waiters);
    if (waiters < 0)
        return NULL;
    if (waiters > 0)
        Py_RETURN_NONE;
    PyObject *dq = PyDict_GetItemWithError(self->batches, tp);  /* borrowed */
    if (dq == NULL && PyErr_Occurred())
        return NULL;
    PyObject *last = NULL;  /* borrowed from the queue */
    if (dq != NULL) {
        if (!PyObject_TypeCheck(dq, (PyTypeObject *)self->deque_type))
            Py_RETURN_NONE;
        Py_ssize_t n = PySequence_Size(dq);
        if (n < 0)
            return NULL;
        if (n > 0) {
            PyObject *item = PySequence_GetItem(dq, n - 1);
            if (item == NULL)
                return NULL;
            last = item;
            Py_DECREF(item);  /* the queue holds it; nothing below runs Python before its last use */
            if (Py_TYPE(last) != self->layout.batch_type)
                Py_RETURN_NONE;
            PyObject *full = SLOT(last, self->layout.b_full);
            PyObject *builder = SLOT(last, self->layout.b_builder);
            if (full == NULL)
                Py_RETURN_NONE;
            int is_full = PyObject_IsTrue(full);
            if (is_full < 0)
                return NULL;
            if (!is_full && builder != NULL && builder != Py_None)
                Py_RETURN_NONE;  /* open but the record did not fit: append() grows or closes it */
        }
    }
    Py_ssize_t headers_len = PyBytes_GET_SIZE(self->no_headers);
    Py_ssize_t total = headers_len + start_field_size(key->len) + start_field_size(value->len)
                       + self->record_overhead + self->batch_header;
    if (total > self->max_record_total)
        Py_RETURN_NONE;  /* append() raises RecordTooLargeError */
    Py_ssize_t used = start_int_attr(acc, s_used);
    Py_ssize_t buffer_memory = used < 0 ? -1 : start_int_attr(acc, s_buffer_memory);
    if (buffer_memory < 0)
        return NULL;
    /* _start_capacity */
    Py_ssize_t capacity = self->full_at < self->first_reservation ? self->full_at : self->first_reservation;
    if (total > capacity)
        capacity = total;
    PyObject *prev = PyDict_GetItemWithError(self->start_reservation, tp);
    if (prev == NULL && PyErr_Occurred())
        return NULL;
    if (prev != NULL) {
        Py_ssize_t previous = PyLong_AsSsize_t(prev);
        if (previous == -1 && PyErr_Occurred())
            return NULL;
        if (previous > capacity && previous <= (buffer_memory - used) / 2)
            capacity = previous;
    }
    if (used + capacity > buffer_memory)
        Py_RETURN_NONE;  /* append() waits for memory, bounded by max_block_ms */
    /* _start_batch: everything that can fail first, then the accumulator's state */
    PyObject *builder = encoder_make(&EncoderType, self->codec, 1, capacity, -1, -1, -1, self->gzip_level);
    if (builder == NULL)
        return NULL;
    Bytes headers = {(const unsigned char *)PyBytes_AS_STRING(self->no_headers), headers_len, {0}, 0};
    Py_ssize_t size = encoder_append_raw((EncoderObject *)builder, ts, key, value, &headers);
    if (size < 0) {  /* cannot happen: capacity holds the first record */
        Py_DECREF(builder);
        if (size == -2)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *created = PyObject_CallNoArgs(self->clock);
    PyObject *reserved = created == NULL ? NULL : PyLong_FromSsize_t(capacity);
    PyObject *new_used = reserved == NULL ? NULL : PyLong_FromSsize_t(used + capacity);
    PyObject *incomplete = new_used == NULL ? NULL : PyObject_GetAttr(acc, s_incomplete);
    PyObject *looks_by = incomplete == NULL ? NULL : PyObject_GetAttr(acc, s_sender_looks_by);
    PyObject *own_ts = looks_by == NULL ? NULL : ts_obj != NULL ? Py_NewRef(ts_obj) : PyLong_FromLongLong(ts);
    PyObject *batch = NULL, *future = NULL, *own_dq = NULL, *result = NULL;
    if (own_ts == NULL)
        goto done;
    if (!PyDict_CheckExact(incomplete)) {
        PyErr_SetString(PyExc_TypeError, "RecordAccumulator._incomplete must be a dict");
        goto done;
    }
    batch = start_new_batch(self, tp, builder, created, reserved);
    if (batch == NULL)
        goto done;
    future = new_future(&self->layout, batch, small_zero, own_ts, key->len < 0 ? -1 : key->len,
                        value->len < 0 ? -1 : value->len);
    if (future == NULL)
        goto done;
    if (dq == NULL) {
        own_dq = PyObject_CallNoArgs(self->deque_type);
        if (own_dq == NULL || PyDict_SetItem(self->batches, tp, own_dq) < 0)
            goto done;
        dq = own_dq;
    } else {
        own_dq = Py_NewRef(dq);
    }
    int full = size >= self->full_at;
    /* the state: memory, the queue, the incomplete batches (each step undone if a later one fails) */
    if (PyObject_SetAttr(acc, s_used, new_used) < 0)
        goto done;
    PyObject *r = PyObject_CallMethodOneArg(own_dq, s_append, batch);
    if (r == NULL || PyDict_SetItem(incomplete, batch, Py_None) < 0) {
        PyObject *exc_type, *exc_value, *exc_tb;
        PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
        PyObject *old = PyLong_FromSsize_t(used);
        if (old != NULL && PyObject_SetAttr(acc, s_used, old) < 0)
            PyErr_Clear();
        Py_XDECREF(old);
        if (r != NULL) {  /* appended: take it out again */
            PyObject *popped = PyObject_CallMethod(own_dq, "pop", NULL);
            if (popped == NULL)
                PyErr_Clear();
            Py_XDECREF(popped);
        }
        Py_XDECREF(r);
        PyErr_Restore(exc_type, exc_value, exc_tb);
        goto done;
    }
    Py_DECREF(r);
    /* (no thread waits for memory: start() answered None above otherwise, so nothing to notify) */
    int wake = 1;
    if (last == NULL && looks_by != Py_None && !full) {
        double lingers_until = monotonic_s() + self->linger_s;
        PyObject *lb = PyObject_CallNoArgs(looks_by);
        if (lb == NULL)
            goto done;
        double by = PyFloat_AsDouble(lb);
        Py_DECREF(lb);
        if (by == -1.0 && PyErr_Occurred())
            goto done;
        if (lingers_until >= by)
            wake = 0;
    }
    result = PyTuple_Pack(3, future, wake ? Py_True : Py_False, full ? Py_True : Py_False);
done:
    Py_DECREF(builder);
    Py_XDECREF(created);
    Py_XDECREF(reserved);
    Py_XDECREF(new_used);
    Py_XDECREF(incomplete);
    Py_XDECREF(looks_by);
    Py_XDECREF(own_ts);
    Py_XDECREF(batch);
    Py_XDECREF(future);
    Py_XDECREF(own_dq);
    return result;
}

/* start(tp, timestamp, key, value) -> (future, wake, full), or None: try_new_batch's answer. */
static PyObject *
appender_start(AppenderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "start(tp, timestamp, key, value)");
        return NULL;
    }
    if (!self->can_start) {
        PyErr_SetString(PyExc_RuntimeError, "Appender.start() before configure_start() enabled it");
        return NULL;
    }
    int64_t ts;
    if (as_int64(args[1], &ts, "timestamp") < 0)
        return NULL;
    Bytes key, value;
    if (bytes_get(args[2], &key, "key") < 0)
        return NULL;
    if (bytes_get(args[3], &value, "value") < 0) {
        bytes_release(&key);
        return NULL;
    }
    PyObject *result = NULL;
    if (appender_lock(self) == 0)
        result = appender_unlock(self, appender_start_locked(self, args[0], ts, args[1], &key, &value));
    bytes_release(&key);
    bytes_release(&value);
    return result;
}

static PyObject *
appender_mark_closed(AppenderObject *self, PyObject *Py_UNUSED(ignored))
{
    self->closed = 1;
    Py_RETURN_NONE;
}

static PyMethodDef appender_methods[] = {
    {"append", (PyCFunction)(void (*)(void))appender_call, METH_FASTCALL,
     "append(tp, timestamp, key, value, headers_encoded) -> (future, wake), or None: use the Python path"},
    {"configure_start", (PyCFunction)(void (*)(void))appender_configure_start, METH_FASTCALL,
     "configure_start(start_reservation, clock, max_wait_s, linger_s, record_overhead, batch_header_size, "
     "max_record_total, first_reservation, codec, gzip_level, no_headers, deque_type, encoder) -> bool"},
    {"start", (PyCFunction)(void (*)(void))appender_start, METH_FASTCALL,
     "start(tp, timestamp, key, value) -> (future, wake, full), or None: RecordAccumulator.try_new_batch"},
    {"mark_closed", (PyCFunction)appender_mark_closed, METH_NOARGS,
     "The accumulator is closed: every later append goes the Python way (call with its lock held)."},
    {NULL}
};

static PyTypeObject AppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "txnproducer._internal.accel._speedups.Appender",
    .tp_basicsize = sizeof(AppenderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "RecordAccumulator.append for a record that joins an open batch.",
    .tp_new = appender_new,
    .tp_dealloc = (destructor)appender_dealloc,
    .tp_traverse = (traverseproc)appender_traverse,
    .tp_clear = (inquiry)appender_clear,
    .tp_methods = appender_methods,
};

/* ---------------------------------------------------------------- SendPath */

typedef struct {
    PyObject_HEAD
    PyObject *producer;      /* the fallback's first argument */
    PyObject *tm;            /* add_partition(); its state arrives through set_in_transaction() */
    PyObject *net;           /* wakeup() */
    PyObject *partitions;    /* net.partition_cache: topic -> partition ids (cleared, never replaced) */
    PyObject *current;       /* the sticky partitioner's topic -> StickyPartition dict */
    PyObject *sticky;        /* the StickyPartitioner: _choose(topic, parts) */
    PyObject *tps;           /* topic -> {partition: TopicPartition} */
    PyObject *appender;      /* AppenderObject */
    PyObject *no_headers;    /* encoded "no headers" */
    PyObject *fallback;      /* the Python TransactionalProducer.send: every case not taken here */
    PyObject *new_batch;     /* RecordAccumulator.try_new_batch (or NULL): a record that starts a batch */
    PyObject *added;         /* the producer's _added of this transaction (set_added() replaces it) */
    PyObject *known_tp;      /* a partition found in ``added`` (the last one): no lookup for it */
    Py_ssize_t sticky_batch_size;
    Py_ssize_t record_overhead;
    int plain_keys, plain_values, builtin_partitioner;
    PyTypeObject *sticky_type;  /* StickyPartition: its slots parts, tp, produced by offset */
    Py_ssize_t sp_parts, sp_tp, sp_produced;
    /* The producer's state as the fast path needs it, pushed by its owners (set_in_transaction from
     * the TM's transitions, mark_closed from close(), mark_crashed from the Sender) instead of read
     * from three objects per record. Only IN_TXN alone lets a record through. */
    int flags;
} SendPathObject;

#define SP_IN_TXN 1
#define SP_CLOSED 2
#define SP_CRASHED 4

static PyTypeObject SendPathType;

static int
sendpath_traverse(SendPathObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->producer);
    Py_VISIT(self->tm);
    Py_VISIT(self->net);
    Py_VISIT(self->partitions);
    Py_VISIT(self->sticky);
    Py_VISIT(self->current);
    Py_VISIT(self->tps);
    Py_VISIT(self->appender);
    Py_VISIT(self->no_headers);
    Py_VISIT(self->fallback);
    Py_VISIT(self->new_batch);
    Py_VISIT(self->added);
    Py_VISIT(self->known_tp);
    Py_VISIT(self->sticky_type);
    return 0;
}

static int
sendpath_clear(SendPathObject *self)
{
    Py_CLEAR(self->producer);
    Py_CLEAR(self->tm);
    Py_CLEAR(self->net);
    Py_CLEAR(self->partitions);
    Py_CLEAR(self->sticky);
    Py_CLEAR(self->current);
    Py_CLEAR(self->tps);
    Py_CLEAR(self->appender);
    Py_CLEAR(self->no_headers);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->new_batch);
    Py_CLEAR(self->added);
    Py_CLEAR(self->known_tp);
    Py_CLEAR(self->sticky_type);
    return 0;
}

static void
sendpath_dealloc(SendPathObject *self)
{
    PyObject_GC_UnTrack(self);
    sendpath_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static uint32_t
murmur2_raw(const unsigned char *data, Py_ssize_t length)
{
    const uint32_t m = 0x5bd1e995;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    Py_ssize_t length4 = length / 4;
    for (Py_ssize_t i = 0; i < length4; i++) {
        const unsigned char *q = data + 4 * i;
        uint32_t k = (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    Py_ssize_t tail = length & ~(Py_ssize_t)3;
    switch (length % 4) {
    case 3: h ^= (uint32_t)data[tail + 2] << 16; /* fall through */
    case 2: h ^= (uint32_t)data[tail + 1] << 8;  /* fall through */
    case 1: h ^= data[tail]; h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

/* After the append: tp joins the transaction, the sticky partitioner counts, the Sender wakes
 * (producer.send()'s order). Returns 0, or -1 with an exception set. */
static int
sendpath_after_append(SendPathObject *self, PyObject *topic, PyObject *tp, PyObject *sticky_obj,
                      Py_ssize_t appended, int full, int wake)
{
    int in_txn = (self->flags & SP_IN_TXN) != 0;  /* the TM's state, read again after the append */
    /* held: add_partition() runs Python, during which another thread may begin the next
     * transaction and replace the set */
    PyObject *added = Py_NewRef(self->added);
    int known = 0;
    if (in_txn) {
        known = tp == self->known_tp ? 1 : PySet_Contains(added, tp);
        if (known < 0) {
            Py_DECREF(added);
            return -1;
        }
    }
    if (!known) {
        PyObject *r = PyObject_CallMethodOneArg(self->tm, s_add_partition, tp);
        if (r == NULL || PySet_Add(added, tp) < 0) {
            Py_XDECREF(r);
            Py_DECREF(added);
            return -1;
        }
        Py_DECREF(r);
    }
    int current = added == self->added;
    Py_DECREF(added);
    if (current && tp != self->known_tp) {
        Py_INCREF(tp);
        Py_XSETREF(self->known_tp, tp);
    }
    if (sticky_obj != NULL) {
        /* sticky_obj is a StickyPartition (checked by the caller): its slots by offset */
        PyObject *produced_obj = SLOT(sticky_obj, self->sp_produced);
        if (produced_obj == NULL) {
            PyErr_SetString(PyExc_AttributeError, "StickyPartition.produced is not set");
            return -1;
        }
        Py_ssize_t produced = PyLong_AsSsize_t(produced_obj);
        if (produced == -1 && PyErr_Occurred())
            return -1;
        produced += appended;
        PyObject *p = PyLong_FromSsize_t(produced);
        if (p == NULL)
            return -1;
        slot_set(sticky_obj, self->sp_produced, p);
        /* Whether tp's last batch is full: ``full``, computed under the accumulator's lock with
         * the append, as the Java client computes it in append(); the Python path asks
         * is_last_batch_full() afterwards, which takes the lock again. */
        if (produced >= self->sticky_batch_size && (full || produced >= 2 * self->sticky_batch_size)) {
            {
                PyObject *parts = SLOT(sticky_obj, self->sp_parts);
                if (parts == NULL) {
                    PyErr_SetString(PyExc_AttributeError, "StickyPartition.parts is not set");
                    return -1;
                }
                Py_INCREF(parts);
                PyObject *r = PyObject_CallMethodObjArgs(self->sticky, s_choose, topic, parts, NULL);
                Py_DECREF(parts);
                if (r == NULL)
                    return -1;
                Py_DECREF(r);
            }
        }
    }
    if (wake) {
        PyObject *r = PyObject_CallMethodNoArgs(self->net, s_wakeup);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

/* new_batch(tp, timestamp, key, value) -> (future, wake, full) or None: the accumulator's answer,
 * checked for its shape. Returns the future (setting *wake and *full), Py_None (a new reference:
 * the Python path decides, nothing changed) or NULL with an exception set. */
static PyObject *
sendpath_new_batch(SendPathObject *self, PyObject *tp, int64_t ts, PyObject *ts_obj, PyObject *key,
                   PyObject *value, int *wake, int *full)
{
    PyObject *ts_own = ts_obj != NULL ? Py_NewRef(ts_obj) : PyLong_FromLongLong(ts);
    if (ts_own == NULL)
        return NULL;
    PyObject *args[4] = {tp, ts_own, key, value};
    PyObject *r = PyObject_Vectorcall(self->new_batch, args, 4, NULL);
    Py_DECREF(ts_own);
    if (r == NULL || r == Py_None)
        return r;
    if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) != 3) {
        Py_DECREF(r);
        PyErr_SetString(PyExc_TypeError, "try_new_batch() must answer (future, wake, full) or None");
        return NULL;
    }
    int w = PyObject_IsTrue(PyTuple_GET_ITEM(r, 1));
    int f = PyObject_IsTrue(PyTuple_GET_ITEM(r, 2));
    if (w < 0 || f < 0) {
        Py_DECREF(r);
        return NULL;
    }
    *wake = w;
    *full = f;
    PyObject *future = Py_NewRef(PyTuple_GET_ITEM(r, 0));
    Py_DECREF(r);
    return future;
}

/* try_send(topic, value, key, timestamp_ms, partition) -> RecordFuture, or None: the Python send()
 * decides (nothing has changed then). */
static PyObject *
sendpath_try(SendPathObject *self, PyObject *topic, PyObject *value, PyObject *key, PyObject *ts_arg,
             PyObject *partition_arg)
{
    if (!PyUnicode_CheckExact(topic) || PyUnicode_GET_LENGTH(topic) == 0)
        Py_RETURN_NONE;
    if (!(value == Py_None || (self->plain_values && PyBytes_CheckExact(value))))
        Py_RETURN_NONE;
    if (!(key == Py_None || (self->plain_keys && PyBytes_CheckExact(key))))
        Py_RETURN_NONE;
    /* an explicit partition: a plain int (bool and other subclasses: the Python path checks them);
     * it is used whatever the partitioner (producer._partition()'s order) */
    long explicit_partition = -1;
    if (partition_arg != Py_None) {
        if (!PyLong_CheckExact(partition_arg))
            Py_RETURN_NONE;
        int overflow;
        explicit_partition = PyLong_AsLongAndOverflow(partition_arg, &overflow);
        if (explicit_partition == -1 && PyErr_Occurred())
            return NULL;
        if (overflow || explicit_partition < 0)
            Py_RETURN_NONE;  /* the Python path raises InvalidRecordError */
    } else if (!self->builtin_partitioner) {
        Py_RETURN_NONE;
    }
    int64_t ts;
    PyObject *ts_obj = NULL;
    if (ts_arg == Py_None) {
        ts = now_ms();
    } else {
        if (!PyLong_CheckExact(ts_arg))
            Py_RETURN_NONE;
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(ts_arg, &overflow);
        if (overflow || v < 0) {
            if (v == -1 && PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
        ts = v;
        ts_obj = ts_arg;
    }
    /* a transaction is open, the producer is open and its Sender alive */
    if (self->flags != SP_IN_TXN)
        Py_RETURN_NONE;
    /* partitions known (the Python path fetches metadata) */
    PyObject *parts = PyDict_GetItemWithError(self->partitions, topic);
    Py_XINCREF(parts);
    if (parts == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    int has_parts = PyObject_IsTrue(parts);
    if (has_parts <= 0) {
        Py_DECREF(parts);
        return has_parts < 0 ? NULL : Py_NewRef(Py_None);
    }
    PyObject *tp = NULL;          /* borrowed from the dicts it lives in, kept by a reference below */
    PyObject *sticky_obj = NULL;  /* a new reference when keyless */
    if (explicit_partition >= 0) {
        /* one of the topic's partitions (send_checks.check_partition: ids 0..n-1, so the index
         * check; anything else - a partition the metadata does not list - the Python path raises) */
        Py_ssize_t count = PySequence_Size(parts);
        if (count < 0) {
            Py_DECREF(parts);
            return NULL;
        }
        int listed = 0;
        if (explicit_partition < count) {
            PyObject *at = PySequence_GetItem(parts, (Py_ssize_t)explicit_partition);
            if (at == NULL) {
                Py_DECREF(parts);
                return NULL;
            }
            listed = PyObject_RichCompareBool(at, partition_arg, Py_EQ);
            Py_DECREF(at);
            if (listed < 0) {
                Py_DECREF(parts);
                return NULL;
            }
        }
        PyObject *by_partition = listed ? PyDict_GetItemWithError(self->tps, topic) : NULL;
        if (by_partition != NULL && PyDict_Check(by_partition)) {
            tp = PyDict_GetItemWithError(by_partition, partition_arg);
            Py_XINCREF(tp);
        }
        if (tp == NULL) {
            Py_DECREF(parts);
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;  /* not listed, or the partition's first record: the Python path */
        }
    } else if (key == Py_None) {
        sticky_obj = PyDict_GetItemWithError(self->current, topic);
        if (sticky_obj == NULL) {
            Py_DECREF(parts);
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;  /* the Python path chooses the topic's first partition */
        }
        if (Py_TYPE(sticky_obj) != self->sticky_type || SLOT(sticky_obj, self->sp_parts) != parts
            || SLOT(sticky_obj, self->sp_tp) == NULL || SLOT(sticky_obj, self->sp_produced) == NULL) {
            Py_DECREF(parts);
            Py_RETURN_NONE;  /* the topic's metadata changed: the Python path chooses again */
        }
        Py_INCREF(sticky_obj);
        tp = SLOT(sticky_obj, self->sp_tp);
        Py_INCREF(tp);
    } else {
        Py_ssize_t count = PySequence_Size(parts);
        if (count <= 0) {
            Py_DECREF(parts);
            return count < 0 ? NULL : Py_NewRef(Py_None);
        }
        uint32_t h = murmur2_raw((const unsigned char *)PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key));
        long partition = (long)((h & 0x7FFFFFFFu) % (uint32_t)count);
        PyObject *by_partition = PyDict_GetItemWithError(self->tps, topic);
        PyObject *pnum = by_partition != NULL && PyDict_Check(by_partition) ? PyLong_FromLong(partition) : NULL;
        if (pnum != NULL) {
            tp = PyDict_GetItemWithError(by_partition, pnum);
            Py_DECREF(pnum);
            Py_XINCREF(tp);
        }
        if (tp == NULL) {
            Py_DECREF(parts);
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;  /* first record of this partition: the Python path makes its tp */
        }
    }
    Py_DECREF(parts);
    Bytes kb, vb, hb;
    bytes_get(key, &kb, "key");      /* None or exact bytes: no view, cannot fail */
    bytes_get(value, &vb, "value");
    /* bytes, or a subclass of it (its buffer is then a view: released below, on every path) */
    if (bytes_get(self->no_headers, &hb, "headers") < 0) {
        Py_DECREF(tp);
        Py_XDECREF(sticky_obj);
        return NULL;
    }
    int wake = 0;
    PyObject *future = appender_append_raw((AppenderObject *)self->appender, tp, ts, ts_obj, &kb, &vb,
                                           &hb, &wake);
    bytes_release(&kb);
    bytes_release(&vb);
    bytes_release(&hb);
    int full = wake;  /* the record joined an open batch: it is full when it reached its capacity */
    if (future == Py_None && self->new_batch != NULL) {
        /* no open batch took it (each transaction's first record of a partition): the
         * accumulator starts one, or answers None for what only the Python send() handles */
        Py_DECREF(future);
        future = sendpath_new_batch(self, tp, ts, ts_obj, key, value, &wake, &full);
    }
    if (future == NULL || future == Py_None) {
        Py_DECREF(tp);
        Py_XDECREF(sticky_obj);
        return future;  /* an error, or the Python path (nothing changed yet) */
    }
    Py_ssize_t appended = self->record_overhead + (kb.len < 0 ? 0 : kb.len) + (vb.len < 0 ? 0 : vb.len);
    int rc = sendpath_after_append(self, topic, tp, sticky_obj, appended, full, wake);
    Py_DECREF(tp);
    Py_XDECREF(sticky_obj);
    if (rc < 0) {
        Py_DECREF(future);
        return NULL;
    }
    return future;
}

static PyObject *
sendpath_try_method(SendPathObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "try_send(topic, value, key, timestamp_ms, partition)");
        return NULL;
    }
    return sendpath_try(self, args[0], args[1], args[2], args[3], args[4]);
}

/* send()'s parameters, in order: a keyword argument is matched by identity first (the caller's
 * names are interned like these), then by value */
#define SEND_PARAMS 6
static PyObject *send_params[SEND_PARAMS];  /* topic, value, key, partition, timestamp_ms, headers */

static int
send_param_index(PyObject *name)
{
    for (int i = 0; i < SEND_PARAMS; i++)
        if (name == send_params[i])
            return i;
    for (int i = 0; i < SEND_PARAMS; i++)
        if (PyUnicode_Check(name) && PyUnicode_Compare(name, send_params[i]) == 0)
            return i;
    return -1;
}

/* The producer's send() itself, when the producer installs this object as its ``send``: the
 * common case here, every other one (and any argument error) by the Python send(), called with the
 * arguments exactly as given. Saves the Python frame of send() on every record. */
static PyObject *
sendpath_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    SendPathObject *self = (SendPathObject *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *a[SEND_PARAMS] = {NULL, Py_None, Py_None, Py_None, Py_None, Py_None};
    int simple = nargs + nkw <= SEND_PARAMS;
    for (Py_ssize_t i = 0; simple && i < nargs; i++)
        a[i] = args[i];
    for (Py_ssize_t j = 0; simple && j < nkw; j++) {
        int at = send_param_index(PyTuple_GET_ITEM(kwnames, j));
        if (at < nargs)  /* unknown (-1), or given twice: the Python send() raises */
            simple = 0;
        else
            a[at] = args[nargs + j];
    }
    if (simple && a[0] != NULL && a[5] == Py_None) {
        PyObject *r = sendpath_try(self, a[0], a[1], a[2], a[4], a[3]);
        if (r != Py_None)
            return r;  /* the record's future, or NULL with the exception set */
        Py_DECREF(r);
    }
    /* fallback(producer, *args, **kwargs), without copying them when there is room in front */
    PyObject *small[1 + 2 * SEND_PARAMS];
    PyObject **stack = nargs + nkw + 1 <= (Py_ssize_t)(sizeof(small) / sizeof(small[0])) ? small
        : PyMem_Malloc((size_t)(nargs + nkw + 1) * sizeof(PyObject *));
    if (stack == NULL)
        return PyErr_NoMemory();
    stack[0] = self->producer;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++)
        stack[i + 1] = args[i];
    PyObject *r = PyObject_Vectorcall(self->fallback, stack, (size_t)(nargs + 1), kwnames);
    if (stack != small)
        PyMem_Free(stack);
    return r;
}

static PyObject *
sendpath_tp_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    return PyVectorcall_Call(self, args, kwargs);
}

typedef struct {
    SendPathObject base;
    vectorcallfunc vectorcall;
} SendPathWithVectorcall;

/* SendPath(producer, ..., fallback): complete once made (see the top of the file). */
static PyObject *
sendpath_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"producer", "transaction_manager", "network",
                             "sticky", "sticky_current", "sticky_batch_size", "topic_partitions",
                             "appender", "no_headers", "record_overhead", "plain_keys",
                             "plain_values", "builtin_partitioner", "sticky_type", "partition_cache",
                             "added", "fallback", "new_batch", NULL};
    PyObject *producer, *tm, *net, *sticky, *current, *tps, *appender, *no_headers;
    PyObject *sticky_type, *partitions, *added, *fallback, *new_batch = Py_None;
    Py_ssize_t sticky_batch_size, record_overhead;
    int plain_keys, plain_values, builtin;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOO!nO!O!O!npppO!O!O!O|O:SendPath", kwlist, &producer,
                                     &tm, &net, &sticky, &PyDict_Type, &current,
                                     &sticky_batch_size, &PyDict_Type, &tps, &AppenderType, &appender,
                                     &PyBytes_Type, &no_headers, &record_overhead, &plain_keys,
                                     &plain_values, &builtin, &PyType_Type, &sticky_type,
                                     &PyDict_Type, &partitions, &PySet_Type, &added, &fallback,
                                     &new_batch))
        return NULL;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable (TransactionalProducer.send)");
        return NULL;
    }
    if (new_batch != Py_None && !PyCallable_Check(new_batch)) {
        PyErr_SetString(PyExc_TypeError, "new_batch must be callable (RecordAccumulator.try_new_batch) or None");
        return NULL;
    }
    Py_ssize_t sp_parts = slot_offset((PyTypeObject *)sticky_type, "parts");
    Py_ssize_t sp_tp = slot_offset((PyTypeObject *)sticky_type, "tp");
    Py_ssize_t sp_produced = slot_offset((PyTypeObject *)sticky_type, "produced");
    if (sp_parts < 0 || sp_tp < 0 || sp_produced < 0) {
        PyErr_SetString(PyExc_TypeError, "StickyPartition lacks the slots parts, tp, produced");
        return NULL;
    }
    SendPathObject *self = (SendPathObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    ((SendPathWithVectorcall *)self)->vectorcall = sendpath_vectorcall;
    self->sp_parts = sp_parts;
    self->sp_tp = sp_tp;
    self->sp_produced = sp_produced;
    self->sticky_type = (PyTypeObject *)Py_NewRef(sticky_type);
    self->producer = Py_NewRef(producer);
    self->tm = Py_NewRef(tm);
    self->net = Py_NewRef(net);
    self->partitions = Py_NewRef(partitions);
    self->sticky = Py_NewRef(sticky);
    self->current = Py_NewRef(current);
    self->tps = Py_NewRef(tps);
    self->appender = Py_NewRef(appender);
    self->no_headers = Py_NewRef(no_headers);
    self->added = Py_NewRef(added);
    self->fallback = Py_NewRef(fallback);
    self->new_batch = new_batch == Py_None ? NULL : Py_NewRef(new_batch);
    self->known_tp = NULL;
    self->sticky_batch_size = sticky_batch_size;
    self->record_overhead = record_overhead;
    self->plain_keys = plain_keys;
    self->plain_values = plain_values;
    self->builtin_partitioner = builtin;
    self->flags = 0;  /* not in a transaction until the TM says so */
    return (PyObject *)self;
}

static PyObject *
sendpath_set_in_transaction(SendPathObject *self, PyObject *arg)
{
    int yes = PyObject_IsTrue(arg);
    if (yes < 0)
        return NULL;
    self->flags = yes ? (self->flags | SP_IN_TXN) : (self->flags & ~SP_IN_TXN);
    Py_RETURN_NONE;
}

static PyObject *
sendpath_set_added(SendPathObject *self, PyObject *arg)
{
    if (!PySet_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "set_added() takes the producer's set of partitions");
        return NULL;
    }
    Py_INCREF(arg);
    Py_XSETREF(self->added, arg);
    Py_CLEAR(self->known_tp);  /* found in the old set, not (yet) in this one */
    Py_RETURN_NONE;
}

static PyObject *
sendpath_mark_closed(SendPathObject *self, PyObject *Py_UNUSED(ignored))
{
    self->flags |= SP_CLOSED;
    Py_RETURN_NONE;
}

static PyObject *
sendpath_mark_crashed(SendPathObject *self, PyObject *Py_UNUSED(ignored))
{
    self->flags |= SP_CRASHED;
    Py_RETURN_NONE;
}

static PyObject *
sendpath_is_open(SendPathObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->flags == SP_IN_TXN);
}

static PyMethodDef sendpath_methods[] = {
    {"try_send", (PyCFunction)(void (*)(void))sendpath_try_method, METH_FASTCALL,
     "try_send(topic, value, key, timestamp_ms, partition) -> the record's future, or None when the Python send() "
     "must decide (nothing has changed then)."},
    {"set_in_transaction", (PyCFunction)sendpath_set_in_transaction, METH_O,
     "set_in_transaction(bool): the TM entered (True, after the change) or is leaving (False, before it) "
     "IN_TRANSACTION."},
    {"set_added", (PyCFunction)sendpath_set_added, METH_O,
     "set_added(set): the producer's partitions of the transaction beginning (it replaces the set)."},
    {"mark_closed", (PyCFunction)sendpath_mark_closed, METH_NOARGS, "The producer is closing: no more records."},
    {"mark_crashed", (PyCFunction)sendpath_mark_crashed, METH_NOARGS, "The Sender thread died: no more records."},
    {"is_open", (PyCFunction)sendpath_is_open, METH_NOARGS, "Whether a record may take the fast path now."},
    {NULL}
};

static PyTypeObject SendPathType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "txnproducer._internal.accel._speedups.SendPath",
    .tp_basicsize = sizeof(SendPathWithVectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "send(topic, value=None, key=None, partition=None, timestamp_ms=None, headers=None) -> "
              "RecordFuture: TransactionalProducer.send, compiled for the common case (see its docstring).",
    .tp_new = sendpath_new,
    .tp_dealloc = (destructor)sendpath_dealloc,
    .tp_traverse = (traverseproc)sendpath_traverse,
    .tp_clear = (inquiry)sendpath_clear,
    .tp_call = sendpath_tp_call,
    .tp_methods = sendpath_methods,
    .tp_vectorcall_offset = offsetof(SendPathWithVectorcall, vectorcall),
};

/* ---------------------------------------------------------------- module functions */

static PyObject *
mod_crc32c(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t c = crc32c(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *
mod_murmur2(PyObject *Py_UNUSED(module), PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t h = murmur2_raw(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(h);
}

static PyObject *
mod_restamp(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *buf;
    long long pid, epoch, seq;
    if (!PyArg_ParseTuple(args, "O!LLL", &PyByteArray_Type, &buf, &pid, &epoch, &seq))
        return NULL;
    if (check_range(epoch, INT16_MIN, INT16_MAX, "producer epoch") < 0
        || check_range(seq, INT32_MIN, INT32_MAX, "base sequence") < 0)
        return NULL;
    Py_ssize_t n = PyByteArray_GET_SIZE(buf);
    if (n < HEADER_SIZE) {
        PyErr_SetString(PyExc_ValueError, "not a record batch: shorter than its header");
        return NULL;
    }
    unsigned char *b = (unsigned char *)PyByteArray_AS_STRING(buf);
    unsigned char *p = put_be(b + 43, (uint64_t)pid, 8);
    p = put_be(p, (uint16_t)epoch, 2);
    put_be(p, (uint32_t)seq, 4);
    put_be(b + CRC_OFFSET, crc32c(b + ATTRIBUTES_OFFSET, n - ATTRIBUTES_OFFSET), 4);
    Py_RETURN_NONE;
}

static PyObject *
mod_configure(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"compress", NULL};
    PyObject *fn;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kwlist, &fn))
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "compress must be callable");
        return NULL;
    }
    Py_INCREF(fn);
    Py_XSETREF(compress_fn, fn);
    Py_RETURN_NONE;
}

static PyObject *
mod_cpu_crc(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
#ifdef HAVE_HW_CRC
    return PyUnicode_FromString(use_hw_crc ? "sse4.2" : "table");
#else
    return PyUnicode_FromString("table");
#endif
}

static PyMethodDef module_methods[] = {
    {"crc32c", mod_crc32c, METH_O, "CRC-32C of a bytes-like object (kafka.record.util.calc_crc32c)."},
    {"murmur2", mod_murmur2, METH_O, "Kafka's murmur2 of a bytes-like object (unsigned 32 bits)."},
    {"restamp", mod_restamp, METH_VARARGS,
     "restamp(batch: bytearray, producer_id, producer_epoch, base_sequence): new producer state and CRC."},
    {"configure", (PyCFunction)(void (*)(void))mod_configure, METH_VARARGS | METH_KEYWORDS,
     "configure(compress=fn): fn(codec, data, gzip_level) -> bytes compresses batches."},
    {"crc_implementation", mod_cpu_crc, METH_NOARGS, "'sse4.2' or 'table'."},
    {NULL}
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "Compiled per-record path of txnproducer (optional; see txnproducer._internal.accel).", -1,
    module_methods,
};

#define INTERN(var, text) do { var = PyUnicode_InternFromString(text); if (var == NULL) return NULL; } while (0)

PyMODINIT_FUNC
PyInit__speedups(void)
{
    crc_init();
#ifdef HAVE_HW_CRC
    __builtin_cpu_init();
    use_hw_crc = __builtin_cpu_supports("sse4.2");
#endif
    INTERN(s_add_partition, "add_partition");
    INTERN(s_choose, "_choose");
    INTERN(s_wakeup, "wakeup");
    INTERN(s_acquire, "acquire");
    INTERN(s_release, "release");
    INTERN(s_append, "append");
    if ((small_zero = PyLong_FromLong(0)) == NULL || (small_one = PyLong_FromLong(1)) == NULL
        || (small_minus1 = PyLong_FromLong(-1)) == NULL)
        return NULL;
    INTERN(s_memory_waiters, "_memory_waiters");
    INTERN(s_used, "_used");
    INTERN(s_buffer_memory, "buffer_memory");
    INTERN(s_incomplete, "_incomplete");
    INTERN(s_sender_looks_by, "_sender_looks_by");
    INTERN(send_params[0], "topic");
    INTERN(send_params[1], "value");
    INTERN(send_params[2], "key");
    INTERN(send_params[3], "partition");
    INTERN(send_params[4], "timestamp_ms");
    INTERN(send_params[5], "headers");
    if (PyType_Ready(&EncoderType) < 0 || PyType_Ready(&MutexType) < 0 || PyType_Ready(&AppenderType) < 0
        || PyType_Ready(&SendPathType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&speedups_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "BatchEncoder", (PyObject *)&EncoderType) < 0
        || PyModule_AddObjectRef(m, "Mutex", (PyObject *)&MutexType) < 0
        || PyModule_AddObjectRef(m, "Appender", (PyObject *)&AppenderType) < 0
        || PyModule_AddObjectRef(m, "SendPath", (PyObject *)&SendPathType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
