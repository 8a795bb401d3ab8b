/* __slots__ access from C, for the compiled modules that read or build instances of the pure-Python
 * modules' slotted classes (_speedups.c: ProducerBatch, RecordFuture; _produce.c: the Produce answer's
 * classes). A slot's member descriptor gives its offset in the instances once; reading and writing it
 * is then a pointer access, as the descriptor's own get/set are. Each module includes it and gets its
 * own copy (static), as with crc32c.h.
 */
#ifndef TXNPRODUCER_SLOTS_H
#define TXNPRODUCER_SLOTS_H

#include <Python.h>
#include <structmember.h>

#if PY_VERSION_HEX >= 0x030C0000
#define SLOT_OBJECT_EX Py_T_OBJECT_EX
#else
#define SLOT_OBJECT_EX T_OBJECT_EX
#endif

/* The member descriptor's offset, or -1 (no error set) when ``name`` is not a writable object slot of
 * ``type`` (inherited ones included: looked up as an attribute of the type). */
static Py_ssize_t
slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
    if (descr == NULL) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *def = ((PyMemberDescrObject *)descr)->d_member;
        if (def->type == SLOT_OBJECT_EX && !(def->flags & READONLY))
            offset = def->offset;
    }
    Py_DECREF(descr);
    return offset;
}

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* Store ``value`` (a new reference, stolen) into a slot, dropping what it held. */
static inline void
slot_set(PyObject *obj, Py_ssize_t off, PyObject *value)
{
    PyObject *old = SLOT(obj, off);
    SLOT(obj, off) = value;
    Py_XDECREF(old);
}

#endif
