/*
 * txnproducer._internal.accel._produce: the compiled Produce codec (optional).
 *
 * Why C: a small transaction's Sender work is mostly interpreter work per request and per partition,
 * and the Produce request's encoding and its answer's decoding were a sixth of the Sender's bytecodes
 * in a ten-record transaction over six partitions (~2,300 of ~15,700; docs/performance.md, "Fourth
 * pass"). Here they are one call each.
 *
 * The reference is the pure-Python codec, txnproducer/_internal/protocol/produce_request.py and
 * produce_response.py (itself checked against kafka-python's ProduceRequest/ProduceResponse for every
 * version); tests/unit/test_produce_codec_compiled.py compares the two. Only the flexible versions (v9+,
 * all a Kafka 4.x broker speaks) and, for answers, only the common shape are taken here: every partition
 * without record errors, error message or tagged fields, and no tagged fields elsewhere. For anything
 * else (an older version, an answer with an error message, a KIP-951 leader hint, a malformed or
 * truncated answer, a topic that is not a str or uuid.UUID) these functions return None and the caller
 * runs the pure-Python code, which decides (and raises the reference's errors).
 *
 * encode_frame(version, correlation_id, header_tail, transactional_id, acks, timeout_ms, topic_data)
 *   -> bytes | None: the whole frame, [int32 size][api key, version, correlation id][header_tail][body],
 *   as ProduceRequestData.encode_frame builds it; records are any buffer (bytes, bytearray, memoryview)
 *   or None (null).
 * decode_response(data, pos, version) -> ProduceResponseData | None: the answer's body from pos to the
 *   end of data, built with the classes configure() names, the objects set as their own constructors
 *   set them (slot by slot: no Python __init__ runs).
 *
 * Everything runs holding the GIL; buffers are held (PyObject_GetBuffer) while read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "slots.h"

#define PRODUCE_API_KEY 0
#define FIRST_FLEXIBLE 9
#define FIRST_TOPIC_ID 13
#define MAX_VERSION 13

/* -- configuration: the Python classes the decoder builds --------------------------------------- */

enum { P_INDEX, P_ERROR_CODE, P_BASE_OFFSET, P_LOG_APPEND_TIME, P_LOG_START, P_RECORD_ERRORS,
       P_ERROR_MESSAGE, P_CURRENT_LEADER, P_COUNT };
static const char *partition_slots[P_COUNT] = {
    "index", "error_code", "base_offset", "log_append_time_ms", "log_start_offset", "record_errors",
    "error_message", "current_leader"};
enum { R_VERSION, R_RESPONSES, R_THROTTLE, R_ENDPOINTS, R_COUNT };
static const char *response_slots[R_COUNT] = {"API_VERSION", "responses", "throttle_time_ms",
                                              "node_endpoints"};

static PyTypeObject *partition_type = NULL;   /* produce_response.PartitionResponse */
static PyTypeObject *topic_type = NULL;       /* produce_response.TopicResponse (a tuple of 3) */
static PyTypeObject *response_type = NULL;    /* produce_response.ProduceResponseData */
static PyObject *topic_ids = NULL;            /* dict: 16 raw bytes -> uuid.UUID (shared with Python) */
static PyObject *make_topic_id = NULL;        /* produce_response._topic_id(raw) -> uuid.UUID */
static PyTypeObject *uuid_type = NULL;        /* uuid.UUID */
static Py_ssize_t partition_offsets[P_COUNT];
static Py_ssize_t response_offsets[R_COUNT];
static PyObject *empty_tuple = NULL;

static PyObject *
mod_configure(PyObject *self, PyObject *args)
{
    PyTypeObject *ptype, *ttype, *rtype, *utype;
    PyObject *ids, *make_id;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO!:configure", &PyType_Type, &ptype, &PyType_Type, &ttype,
                          &PyType_Type, &rtype, &PyDict_Type, &ids, &make_id, &PyType_Type, &utype))
        return NULL;
    if (!PyType_IsSubtype(ttype, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "the topic response type must be a tuple subclass");
        return NULL;
    }
    Py_ssize_t poffs[P_COUNT], roffs[R_COUNT];
    for (int i = 0; i < P_COUNT; i++)
        if ((poffs[i] = slot_offset(ptype, partition_slots[i])) < 0)
            return PyErr_Format(PyExc_TypeError, "%s.%s is not a writable __slots__ member", ptype->tp_name,
                                partition_slots[i]);
    for (int i = 0; i < R_COUNT; i++)
        if ((roffs[i] = slot_offset(rtype, response_slots[i])) < 0)
            return PyErr_Format(PyExc_TypeError, "%s.%s is not a writable __slots__ member", rtype->tp_name,
                                response_slots[i]);
    memcpy(partition_offsets, poffs, sizeof(poffs));
    memcpy(response_offsets, roffs, sizeof(roffs));
    Py_INCREF(ptype); Py_XSETREF(partition_type, ptype);
    Py_INCREF(ttype); Py_XSETREF(topic_type, ttype);
    Py_INCREF(rtype); Py_XSETREF(response_type, rtype);
    Py_INCREF(ids); Py_XSETREF(topic_ids, ids);
    Py_INCREF(make_id); Py_XSETREF(make_topic_id, make_id);
    Py_INCREF(utype); Py_XSETREF(uuid_type, utype);
    Py_RETURN_NONE;
}

/* -- encoding ---------------------------------------------------------------------------------- */

static inline Py_ssize_t
uvarint_size(uint64_t v)
{
    Py_ssize_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline char *
put_uvarint(char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *p++ = (char)v;
    return p;
}

static inline char *
put_i16(char *p, int v)
{
    p[0] = (char)((v >> 8) & 0xFF);
    p[1] = (char)(v & 0xFF);
    return p + 2;
}

static inline char *
put_i32(char *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    p[0] = (char)(u >> 24);
    p[1] = (char)(u >> 16);
    p[2] = (char)(u >> 8);
    p[3] = (char)u;
    return p + 4;
}

/* A topic id's 16 bytes, big-endian, from its ``int`` (a slot of uuid.UUID: no Python code runs, where
 * the ``bytes`` property and the id's hash would); -1 when it is not a 128-bit unsigned int. */
static int
topic_id_bytes(PyObject *topic, unsigned char out[16])
{
    PyObject *value = PyObject_GetAttrString(topic, "int");
    if (value == NULL)
        return -1;
    if (!PyLong_CheckExact(value)) {
        Py_DECREF(value);
        return 1;
    }
    PyObject *shift = PyLong_FromLong(64);
    PyObject *high = shift != NULL ? PyNumber_Rshift(value, shift) : NULL;
    Py_XDECREF(shift);
    if (high == NULL) {
        Py_DECREF(value);
        return -1;
    }
    unsigned long long lo = PyLong_AsUnsignedLongLongMask(value);
    unsigned long long hi = PyLong_AsUnsignedLongLong(high);  /* OverflowError: negative, or past 128 bits */
    Py_DECREF(high);
    Py_DECREF(value);
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return 1;  /* not an id this encoder knows: the reference decides */
    }
    for (int i = 0; i < 8; i++) {
        out[i] = (unsigned char)(hi >> (56 - 8 * i));
        out[8 + i] = (unsigned char)(lo >> (56 - 8 * i));
    }
    return 0;
}

/* One topic of the request, its inputs frozen: Python code that runs while the plan is made (a UUID
 * subclass's attribute, a buffer provider) cannot change what the second pass reads. */
typedef struct {
    const char *name;      /* the topic's UTF-8 name (the str's own cached encoding), or NULL */
    Py_ssize_t name_len;
    unsigned char id[16];  /* the topic id (v13) */
    PyObject *partitions;  /* a tuple of (index, records) tuples (new reference) */
    Py_ssize_t first;      /* its first partition's place in the indexes and buffers arrays */
} TopicPlan;

/* A C long from a Python int within [lo, hi], or 0 with *ok = 0 (no error left set) when it is not. */
static long
long_in(PyObject *obj, long lo, long hi, int *ok)
{
    long value = PyLong_Check(obj) ? PyLong_AsLong(obj) : 0;
    if (!PyLong_Check(obj) || (value == -1 && PyErr_Occurred()) || value < lo || value > hi) {
        PyErr_Clear();
        *ok = 0;
        return 0;
    }
    return value;
}

static PyObject *
mod_encode_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "encode_frame takes 7 arguments");
        return NULL;
    }
    int ok = 1;
    long version = long_in(args[0], FIRST_FLEXIBLE, MAX_VERSION, &ok);
    long correlation_id = long_in(args[1], INT32_MIN, INT32_MAX, &ok);
    long acks = long_in(args[4], -32768, 32767, &ok);
    long timeout_ms = long_in(args[5], INT32_MIN, INT32_MAX, &ok);
    PyObject *tail = args[2], *txn = args[3];
    if (!ok || !PyBytes_CheckExact(tail) || (txn != Py_None && !PyUnicode_Check(txn)))
        Py_RETURN_NONE;  /* the reference decides */
    int by_id = version >= FIRST_TOPIC_ID;

    const char *txn_data = NULL;
    Py_ssize_t txn_len = -1;
    if (txn != Py_None && (txn_data = PyUnicode_AsUTF8AndSize(txn, &txn_len)) == NULL)
        return NULL;
    PyObject *topic_seq = PySequence_Tuple(args[6]);  /* frozen (a tuple is returned as it is) */
    if (topic_seq == NULL)
        return NULL;
    Py_ssize_t n_topics = PyTuple_GET_SIZE(topic_seq);
    PyObject *result = NULL;
    TopicPlan *plans = NULL;
    Py_buffer *buffers = NULL;
    int32_t *indexes = NULL;
    Py_ssize_t n_buffers = 0;
    int punt = 0;

    plans = PyMem_Calloc(n_topics ? n_topics : 1, sizeof(TopicPlan));
    if (plans == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* first pass: the plans and the partition count */
    uint64_t size = 4 + 8 + PyBytes_GET_SIZE(tail);
    size += (txn_len < 0 ? 1 : uvarint_size((uint64_t)txn_len + 1) + (uint64_t)txn_len) + 2 + 4;
    size += uvarint_size((uint64_t)n_topics + 1) + 1;  /* the topic count, the body's tags */
    for (Py_ssize_t t = 0; t < n_topics; t++) {
        PyObject *entry = PyTuple_GET_ITEM(topic_seq, t);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2) {
            punt = 1;
            goto done;
        }
        PyObject *topic = PyTuple_GET_ITEM(entry, 0);  /* held by the entry, held by topic_seq */
        TopicPlan *plan = &plans[t];
        if (by_id) {
            int got = (uuid_type != NULL && PyObject_TypeCheck(topic, uuid_type)) ? topic_id_bytes(topic, plan->id)
                                                                                  : 1;
            if (got < 0)
                goto done;
            if (got > 0) {
                punt = 1;
                goto done;
            }
        } else {
            if (!PyUnicode_CheckExact(topic)) {
                punt = 1;
                goto done;
            }
            if ((plan->name = PyUnicode_AsUTF8AndSize(topic, &plan->name_len)) == NULL)
                goto done;
        }
        plan->partitions = PySequence_Tuple(PyTuple_GET_ITEM(entry, 1));
        if (plan->partitions == NULL)
            goto done;
        Py_ssize_t n_parts = PyTuple_GET_SIZE(plan->partitions);
        size += (by_id ? 16 : uvarint_size((uint64_t)plan->name_len + 1) + (uint64_t)plan->name_len)
                + uvarint_size((uint64_t)n_parts + 1) + 1;
        plan->first = n_buffers;
        n_buffers += n_parts;
    }
    buffers = PyMem_Calloc(n_buffers ? n_buffers : 1, sizeof(Py_buffer));
    indexes = PyMem_Calloc(n_buffers ? n_buffers : 1, sizeof(int32_t));
    if (buffers == NULL || indexes == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* second pass: each partition's index and records held (view->obj NULL: null records) */
    for (Py_ssize_t t = 0; t < n_topics; t++) {
        PyObject *parts = plans[t].partitions;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(parts); i++) {
            PyObject *pair = PyTuple_GET_ITEM(parts, i);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                punt = 1;
                goto done;
            }
            Py_ssize_t at = plans[t].first + i;
            indexes[at] = (int32_t)long_in(PyTuple_GET_ITEM(pair, 0), INT32_MIN, INT32_MAX, &ok);
            if (!ok) {
                punt = 1;
                goto done;
            }
            PyObject *records = PyTuple_GET_ITEM(pair, 1);
            if (records == Py_None) {
                size += 4 + 1 + 1;
                continue;
            }
            if (PyObject_GetBuffer(records, &buffers[at], PyBUF_SIMPLE) < 0) {
                buffers[at].obj = NULL;
                PyErr_Clear();
                punt = 1;
                goto done;
            }
            size += 4 + uvarint_size((uint64_t)buffers[at].len + 1) + (uint64_t)buffers[at].len + 1;
        }
    }
    if (size - 4 > INT32_MAX) {
        punt = 1;
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (result == NULL)
        goto done;
    /* third pass: write, from the plans, indexes and held buffers only */
    char *p = PyBytes_AS_STRING(result);
    p = put_i32(p, (int32_t)(size - 4));
    p = put_i16(p, PRODUCE_API_KEY);
    p = put_i16(p, (int)version);
    p = put_i32(p, (int32_t)correlation_id);
    memcpy(p, PyBytes_AS_STRING(tail), PyBytes_GET_SIZE(tail));
    p += PyBytes_GET_SIZE(tail);
    if (txn_len < 0) {
        *p++ = 0;
    } else {
        p = put_uvarint(p, (uint64_t)txn_len + 1);
        memcpy(p, txn_data, txn_len);
        p += txn_len;
    }
    p = put_i16(p, (int)acks);
    p = put_i32(p, (int32_t)timeout_ms);
    p = put_uvarint(p, (uint64_t)n_topics + 1);
    for (Py_ssize_t t = 0; t < n_topics; t++) {
        TopicPlan *plan = &plans[t];
        if (by_id) {
            memcpy(p, plan->id, 16);
            p += 16;
        } else {
            p = put_uvarint(p, (uint64_t)plan->name_len + 1);
            memcpy(p, plan->name, plan->name_len);
            p += plan->name_len;
        }
        Py_ssize_t n_parts = PyTuple_GET_SIZE(plan->partitions);
        p = put_uvarint(p, (uint64_t)n_parts + 1);
        for (Py_ssize_t i = 0; i < n_parts; i++) {
            Py_buffer *view = &buffers[plan->first + i];
            p = put_i32(p, indexes[plan->first + i]);
            if (view->obj == NULL) {
                *p++ = 0;  /* null records */
            } else {
                p = put_uvarint(p, (uint64_t)view->len + 1);
                memcpy(p, view->buf, view->len);
                p += view->len;
            }
            *p++ = 0;  /* the partition's tags */
        }
        *p++ = 0;  /* the topic's tags */
    }
    *p++ = 0;  /* the body's tags */
    if (p != PyBytes_AS_STRING(result) + size) {
        PyErr_SetString(PyExc_SystemError, "Produce request size miscounted");
        Py_CLEAR(result);
    }
done:
    if (buffers != NULL) {
        for (Py_ssize_t i = 0; i < n_buffers; i++)
            if (buffers[i].obj != NULL)
                PyBuffer_Release(&buffers[i]);
        PyMem_Free(buffers);
    }
    PyMem_Free(indexes);
    if (plans != NULL) {
        for (Py_ssize_t t = 0; t < n_topics; t++)
            Py_XDECREF(plans[t].partitions);
        PyMem_Free(plans);
    }
    Py_DECREF(topic_seq);
    if (punt && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}

/* -- decoding ---------------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} Reader;

/* An unsigned varint of at most 5 bytes (a count or length); -1 when truncated or too long. */
static inline int64_t
read_uvarint(Reader *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (r->p >= r->end)
            return -1;
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            return v > INT32_MAX ? -1 : (int64_t)v;
    }
    return -1;
}

static inline int64_t
read_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    if (n < 8 && (v >> (8 * n - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * n);  /* sign-extend */
    return (int64_t)v;
}

/* One partition's answer of the common shape, or NULL: with no error set, "not the common shape". */
static PyObject *
decode_partition(Reader *r)
{
    if (r->end - r->p < 30 + 3)
        return NULL;
    const unsigned char *p = r->p;
    /* no record errors (an empty compact array), a null message, no tags */
    if (p[30] != 1 || p[31] != 0 || p[32] != 0)
        return NULL;
    PyObject *obj = partition_type->tp_alloc(partition_type, 0);
    if (obj == NULL)
        return NULL;
    PyObject *values[5] = {
        PyLong_FromLong((long)read_be(p, 4)),
        PyLong_FromLong((long)read_be(p + 4, 2)),
        PyLong_FromLongLong(read_be(p + 6, 8)),
        PyLong_FromLongLong(read_be(p + 14, 8)),
        PyLong_FromLongLong(read_be(p + 22, 8)),
    };
    int failed = 0;
    for (int i = 0; i < 5; i++) {
        if (values[i] == NULL)
            failed = 1;
        else
            slot_set(obj, partition_offsets[i], values[i]);
    }
    if (failed) {
        Py_DECREF(obj);
        return NULL;
    }
    Py_INCREF(empty_tuple);
    slot_set(obj, partition_offsets[P_RECORD_ERRORS], empty_tuple);
    Py_INCREF(Py_None);
    slot_set(obj, partition_offsets[P_ERROR_MESSAGE], Py_None);
    Py_INCREF(Py_None);
    slot_set(obj, partition_offsets[P_CURRENT_LEADER], Py_None);
    r->p += 33;
    return obj;
}

static PyObject *
topic_id_for(const unsigned char *raw)
{
    PyObject *key = PyBytes_FromStringAndSize((const char *)raw, 16);
    if (key == NULL)
        return NULL;
    PyObject *id = PyDict_GetItemWithError(topic_ids, key);  /* borrowed */
    if (id != NULL) {
        Py_INCREF(id);
    } else if (!PyErr_Occurred()) {
        id = PyObject_CallOneArg(make_topic_id, key);
    }
    Py_DECREF(key);
    return id;
}

static PyObject *
mod_decode_response(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode_response takes 3 arguments");
        return NULL;
    }
    if (response_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_produce.configure() was not called");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    long version = PyLong_AsLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (version < FIRST_FLEXIBLE || version > MAX_VERSION)
        Py_RETURN_NONE;
    int by_id = version >= FIRST_TOPIC_ID;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *topics = NULL, *result = NULL;
    if (pos < 0 || pos > view.len)
        goto done;
    Reader r = {(const unsigned char *)view.buf + pos, (const unsigned char *)view.buf + view.len};
    int64_t n_topics = read_uvarint(&r) - 1;
    if (n_topics < 0 || n_topics > r.end - r.p)
        goto done;
    topics = PyList_New(n_topics);
    if (topics == NULL)
        goto done;
    for (int64_t t = 0; t < n_topics; t++) {
        PyObject *name = NULL, *id = NULL;
        if (by_id) {
            if (r.end - r.p < 16)
                goto done;
            if ((id = topic_id_for(r.p)) == NULL)
                goto done;
            r.p += 16;
            Py_INCREF(Py_None);
            name = Py_None;
        } else {
            int64_t length = read_uvarint(&r) - 1;
            if (length < 0 || length > r.end - r.p)
                goto done;
            name = PyUnicode_DecodeUTF8((const char *)r.p, (Py_ssize_t)length, NULL);
            if (name == NULL) {
                PyErr_Clear();  /* the reference raises its own error */
                goto done;
            }
            r.p += length;
            Py_INCREF(Py_None);
            id = Py_None;
        }
        int64_t n_parts = read_uvarint(&r) - 1;
        PyObject *parts = (n_parts >= 0 && n_parts <= (r.end - r.p) / 33) ? PyList_New(n_parts) : NULL;
        /* tuple.__new__(TopicResponse, (name, id, parts)): the tuple subtype made as tuple makes it
         * (hash cache and all), the fields' own references moved into it */
        PyObject *fields = parts != NULL ? PyTuple_Pack(3, name, id, parts) : NULL;
        PyObject *fields_arg = fields != NULL ? PyTuple_Pack(1, fields) : NULL;
        PyObject *topic = fields_arg != NULL ? PyTuple_Type.tp_new(topic_type, fields_arg, NULL) : NULL;
        Py_XDECREF(fields_arg);
        Py_XDECREF(fields);
        Py_DECREF(name);
        Py_DECREF(id);
        if (topic == NULL) {  /* a bad count (no error set: the reference decides) or no memory */
            Py_XDECREF(parts);
            goto done;
        }
        PyList_SET_ITEM(topics, t, topic);
        Py_DECREF(parts);  /* the topic holds it; filled below through this borrowed pointer */
        for (int64_t i = 0; i < n_parts; i++) {
            PyObject *part = decode_partition(&r);
            if (part == NULL)
                goto done;
            PyList_SET_ITEM(parts, i, part);
        }
        if (r.p >= r.end || *r.p != 0)  /* the topic's tags: none */
            goto done;
        r.p++;
    }
    if (r.end - r.p != 5 || r.p[4] != 0)  /* throttle time, no tags, nothing after */
        goto done;
    PyObject *throttle = PyLong_FromLong((long)read_be(r.p, 4));
    PyObject *version_obj = PyLong_FromLong(version);
    result = (throttle && version_obj) ? response_type->tp_alloc(response_type, 0) : NULL;
    if (result == NULL) {
        Py_XDECREF(throttle);
        Py_XDECREF(version_obj);
        goto done;
    }
    slot_set(result, response_offsets[R_VERSION], version_obj);
    slot_set(result, response_offsets[R_THROTTLE], throttle);
    Py_INCREF(empty_tuple);
    slot_set(result, response_offsets[R_ENDPOINTS], empty_tuple);
    slot_set(result, response_offsets[R_RESPONSES], topics);
    topics = NULL;
done:
    /* a partly built list holds NULL items: PyList's dealloc skips them (Py_XDECREF) */
    Py_XDECREF(topics);
    PyBuffer_Release(&view);
    if (result == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return result;
}

static PyMethodDef module_methods[] = {
    {"encode_frame", (PyCFunction)(void (*)(void))mod_encode_frame, METH_FASTCALL,
     "encode_frame(version, correlation_id, header_tail, transactional_id, acks, timeout_ms, topic_data) "
     "-> the framed Produce request (v9+), or None for the pure-Python encoder to decide."},
    {"decode_response", (PyCFunction)(void (*)(void))mod_decode_response, METH_FASTCALL,
     "decode_response(data, pos, version) -> ProduceResponseData of the common shape (v9+), or None for "
     "the pure-Python decoder to decide."},
    {"configure", mod_configure, METH_VARARGS,
     "configure(PartitionResponse, TopicResponse, ProduceResponseData, topic_ids, make_topic_id, "
     "uuid.UUID): the classes the decoder builds and the topic id cache it shares."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef produce_module = {
    PyModuleDef_HEAD_INIT, "_produce",
    "Compiled Produce request encoder and answer decoder of txnproducer (optional; see "
    "txnproducer._internal.accel).", -1,
    module_methods,
};

PyMODINIT_FUNC
PyInit__produce(void)
{
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL)
        return NULL;
    return PyModule_Create(&produce_module);
}
